"""The benchmark CSV: long format, one row per measurement, appended to ``<out>/<family>.csv``.

One row layout for every family (``COLUMNS``, in order):

    timestamp, run_id, preset, machine, device, torch, triton, spherekit, sentence_transformers
        when, which run, which preset, on what (machine: CPU model and cores, the GPU's name first on CUDA;
        device: cpu or cuda) and with which versions
    family, provider, mode
        the benchmark family, the implementation measured, what is timed (fwd, bwd, fwd+bwd, train-e2e, ...)
    params
        the family's own sizes by name, "name=value" separated by spaces, e.g. "B=1024 N=1024 d=384 k=0"
        (contrastive), "rows=16384 d=1024" (ngpt), "workload=rerank B=1 k=1000 m=32 n=180 d=128" (sim_map)
    dtype, repeats, median_ms, p20_ms, p80_ms, device_median_ms, device_p20_ms, device_p80_ms, peak_extra_mib
        the timing and memory of the measurement (spherekit.bench._harness): wall time per call (host clock
        around a synchronised call), on a GPU also device time (CUDA events around the call's work; empty on CPU)
    metrics
        family-specific results in the same "name=value" form, e.g. "bytes_moved=... gb_per_s=..." (ngpt)
    status, note
        one of ``STATUSES``, and what else there is to say

``read_rows`` returns each row with its params and metrics also as keys of their own (strings, like every
CSV cell), so ``row["B"]`` works for a contrastive row. It reads the older layouts too (``LEGACY_LAYOUTS``: B, N,
d, k columns, or sim_map's and ngpt's own, and "v2", the one layout before the device-time columns: those read
empty); ``append_rows`` upgrades a file in such a layout to ``COLUMNS`` before appending (every cell kept as
written, numbers identical), and ``upgrade_file`` does it on its own.

Every append takes an exclusive lock on the folder and rewrites the whole file atomically
(spherekit._atomic: a temporary file, then os.replace; mode 0o666 less the umask), so the file is never seen
half-written; an existing file with another header is refused.
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
    "timestamp", "run_id", "preset", "machine", "device", "torch", "triton", "spherekit", "sentence_transformers",
    "family", "provider", "mode", "params", "dtype", "repeats",
    "median_ms", "p20_ms", "p80_ms", "device_median_ms", "device_p20_ms", "device_p80_ms", "peak_extra_mib",
    "metrics", "status", "note",
]
DEVICE_COLUMNS = ("device_median_ms", "device_p20_ms", "device_p80_ms")
STATUSES = ("ok", "oom", "skipped", "timeout", "error")
_V1 = ["timestamp", "run_id", "preset", "machine", "torch", "triton", "spherekit", "sentence_transformers",
       "family", "provider", "mode", "B", "N", "d", "k", "dtype", "repeats",
       "median_ms", "p20_ms", "p80_ms", "peak_extra_mib", "status", "note"]
LEGACY_LAYOUTS = {  # the headers written before COLUMNS: contrastive / supervised / verifier_train, ngpt, sim_map
    "v2": [c for c in COLUMNS if c not in DEVICE_COLUMNS],  # every family, before the device-time columns
    "v1": _V1,
    "v1-ngpt": _V1[:-2] + ["bytes_moved", "gb_per_s", "peak_gb_per_s", "status", "note"],
    "v1-sim_map": ["timestamp", "run_id", "preset", "machine", "torch", "triton", "spherekit", "family", "workload",
                  "provider", "mode", "B", "k", "m", "n", "d", "dtype", "repeats", "median_ms", "p20_ms", "p80_ms",
                  "peak_extra_mib", "status", "note"],
}


RENAMED_FAMILIES = {"simmap": "sim_map"}  # family names that legacy rows carry -> today's


def format_fields(row: dict, keys) -> str:
    """The keys of row that it has, as "name=value name=value" (the params / metrics cell)."""
    return " ".join(f"{k}={_fmt(row[k])}" for k in keys if k in row)


def parse_fields(text: str | None) -> dict[str, str]:
    """A params / metrics cell back into {name: value string}."""
    return dict(part.split("=", 1) for part in (text or "").split())


def set_fields(row: dict, params, metrics=()) -> dict:
    """Fill row's params and metrics cells from its keys `params` and `metrics` (in place; returns it)."""
    clash = (set(params) | set(metrics)) & set(COLUMNS)
    if clash:
        raise ValueError(f"params / metrics names {sorted(clash)} are CSV columns")
    row["params"], row["metrics"] = format_fields(row, params), format_fields(row, metrics)
    return row


def _legacy_params(row: dict, layout: str) -> tuple[list[str], list[str], dict]:
    """(params names, metrics names, renamed values) of a row in a legacy layout."""
    family = row.get("family", "")
    if layout == "v1-sim_map":
        return ["workload", "B", "k", "m", "n", "d"], [], {}
    if layout == "v1-ngpt":
        metrics = ["bytes_moved", "gb_per_s", "peak_gb_per_s"]
        if row["provider"] == "peak":  # B = N = elements per array, d = 1, k = 0
            return ["elements"], metrics, {"elements": row["B"]}
        return ["rows", "d"], metrics, {"rows": row["B"]}  # B = N = rows, k = 0
    if family == "verifier_train":  # N = B + 1 candidates per query, d = encoder width, k = 1 near-miss
        return ["B", "candidates", "width", "near_misses"], [], {"candidates": row["N"], "width": row["d"],
                                                                 "near_misses": row["k"]}
    if family == "supervised" and row["N"] == row["B"] and row["k"] == "0":  # N = B and k = 0 meant nothing
        return ["B", "d"], [], {}
    return ["B", "N", "d", "k"], [], {}


def convert_legacy_row(row: dict, layout: str) -> dict:
    """A row of a legacy layout in COLUMNS (every cell kept as the string it was)."""
    if layout == "v2":  # the same cells, no device time
        return {c: row.get(c, "") for c in COLUMNS}
    params, metrics, renamed = _legacy_params(row, layout)
    values = {**row, **renamed}
    out = {c: row.get(c, "") for c in COLUMNS}
    out["family"] = RENAMED_FAMILIES.get(out["family"], out["family"])
    out["device"] = "cuda" if ";" in row.get("machine", "") else "cpu"  # machine_name puts the GPU first on CUDA
    out["params"] = " ".join(f"{k}={values[k]}" for k in params)
    out["metrics"] = " ".join(f"{k}={values[k]}" for k in metrics)
    return out


def _layout(header: list[str]) -> str | None:
    if header == COLUMNS:
        return "current"
    return next((name for name, cols in LEGACY_LAYOUTS.items() if header == cols), None)


def _raw_rows(text: str) -> tuple[list[str], list[dict]]:
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames or []), list(reader)


def _current_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def upgrade_file(path: str | os.PathLike) -> bool:
    """Rewrite a CSV of a legacy layout in COLUMNS (atomically, cells unchanged); False when it already was."""
    path = Path(path)
    with _folder_lock(path.parent):
        return _upgrade_locked(path)


def _upgrade_locked(path: Path) -> bool:
    header, rows = _raw_rows(path.read_text())
    layout = _layout(header)
    if layout is None:
        raise ValueError(f"{path}: header {header} is neither the current columns {COLUMNS} nor a known older "
                         "layout; move the file aside to start a new one")
    if layout == "current":
        return False
    with atomic_open(path, "w", newline="") as f:
        f.write(_current_text([convert_legacy_row(r, layout) for r in rows]))
    return True


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
    """Append rows to a CSV atomically (lock, rewrite through spherekit._atomic); header when new. A file of
    COLUMNS in a legacy layout (LEGACY_LAYOUTS) is upgraded first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(path.parent):
        existing = path.read_text() if path.exists() else ""
        if existing and columns == COLUMNS and _layout(next(csv.reader(io.StringIO(existing)))) not in (None,
                                                                                                     "current"):
            _upgrade_locked(path)
            existing = path.read_text()
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
    """The rows of a CSV as dicts of strings; rows of COLUMNS or of a legacy layout also get their params and
    metrics as keys of their own (a legacy row is converted first: it reads as if upgraded)."""
    header, rows = _raw_rows(Path(path).read_text())
    layout = _layout(header)
    if layout is None:  # another benchmark's own table (reproduce.csv, cached.csv, ...)
        return rows
    if layout != "current":
        rows = [convert_legacy_row(r, layout) for r in rows]
    return [expand(r) for r in rows]


def expand(row: dict) -> dict:
    """row with its params and metrics cells also as keys of their own."""
    return {**parse_fields(row.get("params")), **parse_fields(row.get("metrics")), **row}


def number(row: dict, key: str) -> float:
    """row[key] as a float (CSV rows hold strings); NaN when missing, empty or not a number."""
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return math.nan


def goal_time(row: dict, which: str | None = None) -> tuple[float, str]:
    """(ms, "device time" | "wall time") a goal line compares: the row's device time (CUDA events) where it has
    one, else its wall time; `which` forces one kind (NaN when the row lacks it), so two rows are compared in the
    same time."""
    device = number(row, "device_median_ms")
    if which is None:
        which = "wall time" if math.isnan(device) else "device time"
    return (device if which == "device time" else number(row, "median_ms")), which


def grouped_table(head: str, rows: list[dict], group, line) -> str:
    """A text table: the head, a rule, line(row) per row, and a blank line wherever group(row) changes."""
    lines = [head, "-" * len(head)]
    last = None
    for row in rows:
        key = group(row)
        if last is not None and key != last:
            lines.append("")
        last = key
        lines.append(line(row))
    return "\n".join(lines)


TIMING_HEAD = f"{'wall ms':>11} {'p20-p80 ms':>21} {'peak MiB':>10}  status"


MIN_TRUSTED_REPEATS = 5  # fewer timed calls: a cell is close to a single sample
WIDE_SPREAD = 0.3        # (p80 - p20) / median above this: the timings of a cell disagree


def _repeats(row: dict) -> int:
    value = number(row, "repeats")
    return 0 if math.isnan(value) else int(value)


def _spread(row: dict) -> float:
    """(p80 - p20) / median of the row's device time where it has one, else of its wall time (0 when unknown)."""
    prefix = "device_" if not math.isnan(number(row, "device_median_ms")) else ""
    med = number(row, f"{prefix}median_ms")
    if not med > 0:
        return 0.0
    return (number(row, f"{prefix}p80_ms") - number(row, f"{prefix}p20_ms")) / med


def trust_notes(rows: list[dict]) -> list[str]:
    """Warnings on how far the measured rows can be trusted: cells timed fewer than MIN_TRUSTED_REPEATS times,
    cells whose p20-p80 spread exceeds WIDE_SPREAD of the median (device time where measured), and measurements
    taken on a busy machine
    (1-minute load above the cores, from each row's note)."""
    ok = [r for r in rows if r.get("status") == "ok"]
    few = [r for r in ok if _repeats(r) < MIN_TRUSTED_REPEATS]
    wide = [r for r in ok if _spread(r) > WIDE_SPREAD]
    busy = sorted({part.strip() for r in rows for part in str(r.get("note") or "").split(";")
                   if part.strip().startswith("busy machine")})
    out = []
    if few:
        out.append(f"warning: {len(few)} of {len(ok)} cells timed fewer than {MIN_TRUSTED_REPEATS} times "
                   f"(as few as {min(_repeats(r) for r in few)}): near single samples, "
                   "compare them with care (--repeats raises it)")
    if wide:
        out.append(f"warning: {len(wide)} of {len(ok)} cells have a wide spread (p80 - p20 > "
                   f"{WIDE_SPREAD:.0%} of the median): noisy timings")
    if busy:
        out.append(f"warning: measured on a busy machine ({busy[0]}{' ...' if len(busy) > 1 else ''}): other "
                   "processes competed for the cores")
    return out


def has_device_time(rows: list[dict]) -> bool:
    """Whether any row carries a device time (a GPU run)."""
    return any(row.get("device_median_ms") not in (None, "") for row in rows)


DEVICE_HEAD = f"{'device ms':>10} {'p20-p80 device':>15}"


def timing_table(lead_head: str, rows: list[dict], lead, group=None) -> str:
    """A measurement table: the columns lead(row) (headed lead_head), then timing_cells (wall time), preceded by
    the device time (device_cells) when any row has one; a blank line wherever group(row) changes (never when
    group is None); then trust_notes(rows), if any."""
    device = has_device_time(rows)

    def line(row):
        med, q, mem, status = timing_cells(row)
        dev = " ".join(device_cells(row)) + " " if device else ""
        return f"{lead(row)} {dev}{med} {q:>21} {mem}  {status}"

    head = f"{lead_head} {DEVICE_HEAD + ' ' if device else ''}{TIMING_HEAD}"
    table = grouped_table(head, rows, group or (lambda row: None), line)
    return "\n".join([table, *trust_notes(rows)])


def device_cells(row: dict) -> tuple[str, str]:
    """Table cells of a row's device time: median ms (10 wide), p20-p80 ms (15 wide); '-' where there is none."""
    med = number(row, "device_median_ms")
    if row.get("status") != "ok" or math.isnan(med):
        return f"{'-':>10}", f"{'-':>15}"
    q = f"{number(row, 'device_p20_ms'):.3f}-{number(row, 'device_p80_ms'):.3f}"
    return f"{med:10.3f}", f"{q:>15}"


def timing_cells(row: dict) -> tuple[str, str, str, str]:
    """Table cells of a measurement row: median ms (11 wide), p20-p80 ms, peak MiB (10 wide), status
    (with the note when it did not run); '-' for the numbers of a row whose status is not ok."""
    ok = row["status"] == "ok"
    med = f"{number(row, 'median_ms'):11.2f}" if ok else f"{'-':>11}"
    q = f"{number(row, 'p20_ms'):.2f}-{number(row, 'p80_ms'):.2f}" if ok else "-"
    mem = f"{number(row, 'peak_extra_mib'):10.1f}" if ok else f"{'-':>10}"
    status = row["status"] if ok or not row.get("note") else f"{row['status']} ({row['note']})"
    repeats = _repeats(row)
    if ok and repeats < MIN_TRUSTED_REPEATS:
        status = f"ok ({repeats} repeat{'s' if repeats != 1 else ''})"
    return med, q, mem, status
