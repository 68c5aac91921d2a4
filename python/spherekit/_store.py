"""Where spherekit keeps its data, its caches, and the error raised when a resource is missing.

Directories (each can be moved with an environment variable):

    cache_dir()       $SPHEREKIT_CACHE_DIR, else $XDG_CACHE_HOME/spherekit, else ~/.cache/spherekit
                      (parsed-record caches, the reassembled all-mpnet-base-v2 model)
    nltk_data_dirs()  the directories searched for NLTK corpora: the entries of $NLTK_DATA when it is
                      set (and then only those), else cache_dir()/nltk_data followed by nltk's own
                      default locations (~/nltk_data, /usr/share/nltk_data, ...)
    nltk_data_dir()   where `spherekit data install wordnet` writes: the first entry of $NLTK_DATA,
                      else cache_dir()/nltk_data

Cache entries (write_cache / read_cache / cached): one file per entry, a header line
b"spherekit-cache sha256:<hex digest of the rest>\n" and then the pickle, written atomically. The rule:
an entry is used only when its checksum matches and it unpickles and decodes to the expected structure;
any other file (random bytes, another format, one changed byte, a truncation, a pickle of another
shape) is damaged: a RuntimeWarning names it and the entry is rebuilt and rewritten. What cannot be
repaired that way (CacheDamagedError from a cache with no builder at hand, a cache that cannot be
written) names the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import socket
import warnings
from pathlib import Path

from ._atomic import atomic_open

CACHE_MAGIC = b"spherekit-cache sha256:"
# what decoding an entry of another structure raises
STRUCTURE_ERRORS = (KeyError, ValueError, TypeError, IndexError, AttributeError)

INSTALL_HINT = "spherekit data install {what}"


class DataMissingError(RuntimeError):
    """A data set or model is not installed here. The message says what to run."""

    def __init__(self, what: str, detail: str, install: str | None = None):
        self.what = what
        cmd = install or INSTALL_HINT.format(what=what)
        super().__init__(f"{detail}\nRun `{cmd}` (see `spherekit data status` for what is present).")


def cache_dir() -> Path:
    """Root of spherekit's caches (see the module docstring)."""
    env = os.environ.get("SPHEREKIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "spherekit"


def _nltk_env_dirs() -> list[Path]:
    return [Path(p).expanduser() for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]


def nltk_data_dir() -> Path:
    """The NLTK data directory spherekit installs into: first entry of $NLTK_DATA, else cache_dir()/nltk_data."""
    env = _nltk_env_dirs()
    return env[0] if env else cache_dir() / "nltk_data"


def nltk_data_dirs() -> list[Path]:
    """Directories searched for NLTK corpora, in order (see the module docstring)."""
    env = _nltk_env_dirs()
    if env:
        return env
    dirs = [cache_dir() / "nltk_data"]
    for p in ("~/nltk_data", "/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data",
              "/usr/local/lib/nltk_data"):
        path = Path(p).expanduser()
        if path not in dirs:
            dirs.append(path)
    return dirs


class CacheDamagedError(ValueError):
    """A cache file fails its checksum or cannot be decoded; the message starts with the file's path."""

    def __init__(self, path: str | os.PathLike, why: str):
        self.path = Path(path)
        super().__init__(f"{path}: damaged cache ({why})")


def _warn_damaged(path, why: str) -> None:
    """Warn that the cache file at `path` is damaged and will be rebuilt (returns None)."""
    warnings.warn(f"{CacheDamagedError(path, why)}; rebuilding it", RuntimeWarning, stacklevel=3)


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's content (read in chunks)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_cache(path: str | os.PathLike, obj) -> Path:
    """Store `obj` (not None) at `path` as a cache entry (see the module docstring), atomically."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    with atomic_open(path, "wb") as f:
        f.write(CACHE_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
        f.write(payload)
    return Path(path)


def read_cache(path: str | os.PathLike):
    """The object write_cache stored at `path`; None when the file is absent, or damaged (then with a
    RuntimeWarning naming it)."""
    try:
        data = memoryview(Path(path).read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _warn_damaged(path, f"unreadable: {exc}")
    end = data[:200].tobytes().find(b"\n")
    if end < 0 or not data[:end].tobytes().startswith(CACHE_MAGIC):
        return _warn_damaged(path, "no spherekit cache header")
    payload = data[end + 1:]
    if data[len(CACHE_MAGIC):end].tobytes() != hashlib.sha256(payload).hexdigest().encode():
        return _warn_damaged(path, "sha256 mismatch")
    try:
        return pickle.loads(payload)
    except Exception as exc:  # a verified pickle of classes that changed since
        return _warn_damaged(path, f"does not unpickle: {type(exc).__name__}: {exc}")


def cached(path: str | os.PathLike | None, build, decode=lambda obj: obj, *, read: bool = True,
           write: bool = True):
    """decode(entry at `path`) when that entry is intact and decodes; otherwise obj = build() is stored at
    `path` (when `write`) and decode(obj) returned. An intact entry that decode rejects with one of
    STRUCTURE_ERRORS is damaged (warning, rebuilt); a store that fails warns and is skipped.
    path=None: no cache."""
    if read and path is not None:
        obj = read_cache(path)
        if obj is not None:
            try:
                return decode(obj)
            except STRUCTURE_ERRORS as exc:
                _warn_damaged(path, f"unexpected structure: {type(exc).__name__}: {exc}")
    obj = build()
    if write and path is not None:
        try:
            write_cache(path, obj)
        except OSError as exc:
            warnings.warn(f"{path}: cache not written ({exc})", RuntimeWarning, stacklevel=2)
    return decode(obj)


@contextlib.contextmanager
def file_lock(path: str | os.PathLike):
    """Hold an exclusive flock on `path` (created if missing) for the block: one process at a time builds a
    shared cache. No lock where fcntl does not exist."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        try:
            import fcntl
        except ImportError:  # not POSIX
            yield
            return
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def offline() -> bool:
    """True when downloads are forbidden (SPHEREKIT_OFFLINE, HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set to
    1/true/yes) or no connection to the Hugging Face hub can be opened within 3 seconds."""
    for var in ("SPHEREKIT_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=3):
            return False
    except OSError:
        return True


def file_signature(paths) -> str:
    """A short hash of (name, size, mtime) of the given files: the key of a parsed-record cache."""
    h = hashlib.sha256()
    for p in sorted(str(p) for p in paths):
        st = os.stat(p)
        h.update(f"{p}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return h.hexdigest()[:16]


def code_signature(paths) -> str:
    """A short hash of the contents of the given (small) source files: part of a cache key, so that a
    change to the code that built a cache rebuilds it, and a mere touch does not."""
    h = hashlib.sha256()
    for p in sorted(str(p) for p in paths):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
