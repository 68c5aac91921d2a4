"""The benchmark CSV: long format, one row per measurement, appended to ``<out>/<family>.csv``.

``COLUMNS`` are the columns, in order; ``STATUSES`` the values of the ``status`` column. Every append
takes an exclusive lock on the folder and rewrites the whole file atomically (spherekit._atomic: a
temporary file, then os.replace; mode 0o666 less the umask), so the file is never seen half-written; an
existing file with another header is refused.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from pathlib import Path

from .._atomic import atomic_open

COLUMNS = [
    "timestamp", "run_id", "preset", "machine", "torch", "triton", "spherekit", "sentence_transformers",
    "family", "provider", "mode", "B", "N", "d", "k", "dtype", "repeats",
    "median_ms", "p20_ms", "p80_ms", "peak_extra_mib", "status", "note",
]
STATUSES = ("ok", "oom", "skipped", "timeout", "error")


@contextlib.contextmanager
def _folder_lock(folder: Path):
    """Exclusive flock on the folder itself (no lock file to leave behind); a no-op without fcntl."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def append_rows(path: str | os.PathLike, rows: list[dict], columns: list[str] = COLUMNS) -> None:
    """Append rows to a CSV atomically (lock, rewrite through spherekit._atomic); header when new."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(path.parent):
        existing = path.read_text() if path.exists() else ""
        if existing:
            header = next(csv.reader(io.StringIO(existing)))
            if header != columns:
                raise ValueError(f"{path}: existing header {header} differs from the expected columns {columns}; "
                                 "move the file aside to start a new one")
            if not existing.endswith("\n"):
                existing += "\n"
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        if not existing:
            writer.writeheader()
        writer.writerows([{k: _fmt(v) for k, v in row.items()} for row in rows])
        with atomic_open(path, "w", newline="") as f:
            f.write(existing)
            f.write(buf.getvalue())


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return "" if value is None else value


def read_rows(path: str | os.PathLike) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(row: dict, key: str) -> float:
    """row[key] as a float (CSV rows hold strings); NaN when missing, empty or not a number."""
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return math.nan


def timing_cells(row: dict) -> tuple[str, str, str, str]:
    """Table cells of a measurement row: median ms (11 wide), p20-p80 ms, peak MiB (10 wide), status
    (with the note when it did not run); '-' for the numbers of a row whose status is not ok."""
    ok = row["status"] == "ok"
    med = f"{number(row, 'median_ms'):11.2f}" if ok else f"{'-':>11}"
    q = f"{number(row, 'p20_ms'):.2f}-{number(row, 'p80_ms'):.2f}" if ok else "-"
    mem = f"{number(row, 'peak_extra_mib'):10.1f}" if ok else f"{'-':>10}"
    status = row["status"] if ok or not row.get("note") else f"{row['status']} ({row['note']})"
    return med, q, mem, status
