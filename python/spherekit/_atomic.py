"""Atomic writes: a reader sees the old file or the new one, never a partial one.

    atomic_write_bytes(path, data)              atomic_write_text(path, text)
    atomic_write_json(path, payload)            JSON, indent 2, a list of scalars on one line
    with atomic_open(path, "w") as f: ...       a file object ("w" or "wb"), for writers that stream
    with atomic_path(path) as tmp: ...          a temporary file name, for writers that want a path
                                                (matplotlib's savefig, safetensors' save_file)
    with atomic_dir(target) as tmp: ...         a folder, renamed over `target` in one step
    check_writable(folder)                      before long work: create `folder`, probe a write there

Rule: the content goes to a temporary name beside the destination (same folder, so the same file
system), is flushed to disk, then os.replace()d over the destination; on error the temporary is removed
and the destination is untouched. Files and folders are created as open() and mkdir() create them:
mode 0o666 / 0o777 less the user's umask (so 0644 / 0755 under umask 022), never mkstemp's private 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from pathlib import Path


def _create_temp(path: Path, make) -> Path:
    """A new, unused `.<name>.<pid>.<random>.tmp` beside `path`, created by make(tmp) (exclusive)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            make(tmp)
            return tmp
        except FileExistsError:
            continue


def _new_file(tmp: Path) -> None:
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask applies


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary file name beside `path` (an empty file with the umask's mode); when the block
    succeeds, what was written there replaces `path`, with that mode (a writer that makes its own file,
    as safetensors does with 0600, does not change it)."""
    path = Path(path)
    tmp = _create_temp(path, _new_file)
    mode = stat.S_IMODE(os.stat(tmp).st_mode)
    try:
        yield tmp
        os.chmod(tmp, mode)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """Yield a file object ("w": text, utf-8 unless `encoding` is given; "wb": binary) whose content
    replaces `path` when the block succeeds. Other keyword arguments go to open()."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode: expected 'w' or 'wb', got {mode!r}")
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
        yield f


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the Path."""
    with atomic_open(path, "wb") as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically; returns the Path."""
    with atomic_open(path, "w", encoding=encoding) as f:
        f.write(text)
    return Path(path)


def atomic_write_json(path: str | os.PathLike, payload) -> Path:
    """`payload` as JSON (indent 2; values JSON cannot hold as str), atomically; a list of scalars (a run's
    per-item values) stays on one line, so a file of bootstrap values stays small and readable."""
    return atomic_write_text(path, _dumps(json.loads(json.dumps(payload, default=str))) + "\n")


def _dumps(obj, level: int = 0) -> str:
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(obj, dict) and obj:
        items = (f"{inner}{json.dumps(k)}: {_dumps(v, level + 1)}" for k, v in obj.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(obj, list) and any(isinstance(x, (dict, list)) for x in obj):
        return "[\n" + ",\n".join(f"{inner}{_dumps(x, level + 1)}" for x in obj) + f"\n{pad}]"
    return json.dumps(obj)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike):
    """Yield a fresh folder beside `target`; when the block succeeds it replaces `target` in one rename
    (an existing `target` is moved aside first and removed afterwards). On error nothing changes."""
    target = Path(target)
    tmp = _create_temp(target, lambda p: os.mkdir(p, 0o777))
    try:
        yield tmp
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_writable(folder: str | os.PathLike) -> None:
    """Create `folder` and write a probe file there, before any work starts; a clear error if impossible."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.unlink(_create_temp(folder / ".write-probe", _new_file))
    except OSError as exc:
        raise PermissionError(f"output directory {folder} is not writable ({exc.strerror or exc}); "
                              "pass --out to a writable folder") from exc


__all__ = ["check_writable", "atomic_dir", "atomic_open", "atomic_path", "atomic_write_bytes", "atomic_write_text"]
