"""Where spherekit keeps its data, its caches, and the error raised when a resource is missing.

Directories (each can be moved with an environment variable):

    cache_dir()       $SPHEREKIT_CACHE_DIR, else $XDG_CACHE_HOME/spherekit, else ~/.cache/spherekit
                      (parsed-record caches, the reassembled all-mpnet-base-v2 model)
    nltk_data_dirs()  the directories searched for NLTK corpora: the entries of $NLTK_DATA when it is
                      set (and then only those), else cache_dir()/nltk_data followed by nltk's own
                      default locations (~/nltk_data, /usr/share/nltk_data, ...)
    nltk_data_dir()   where `spherekit data install wordnet` writes: the first entry of $NLTK_DATA,
                      else cache_dir()/nltk_data
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
from pathlib import Path

from .._atomic import atomic_dir, atomic_write_bytes  # noqa: F401 (the data layer's writers)

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


def atomic_pickle(path: str | os.PathLike, obj) -> Path:
    return atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def read_pickle(path: str | os.PathLike):
    """The pickled object at `path`, or None when it is absent or unreadable (a stale cache is rebuilt)."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        return None


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
    import hashlib

    h = hashlib.sha256()
    for p in sorted(str(p) for p in paths):
        st = os.stat(p)
        h.update(f"{p}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return h.hexdigest()[:16]


def code_signature(paths) -> str:
    """A short hash of the contents of the given (small) source files: part of a cache key, so that a
    change to the code that built a cache rebuilds it, and a mere touch does not."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(str(p) for p in paths):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
