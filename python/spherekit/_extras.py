"""Optional dependencies: the extra that brings each feature, checked before a command does any work.

spherekit itself needs torch, numpy, tqdm and matplotlib (the ops, the references, the nGPT blocks, `spherekit
bench`). The rest comes with an extra (pyproject.toml's [project.optional-dependencies]; EXTRAS below is the same
table by import name, and tests/test_extras.py keeps both in step with the imports in python/spherekit):

    st         spherekit.losses, spherekit.models, the sentence-transformers modules of spherekit.nn
    train      st + what sentence-transformers' trainer needs (datasets, accelerate)
    eval       st + `spherekit eval`, spherekit.evaluation / data / retrieval (faiss, scipy, scikit-learn, nltk,
               spaCy, the NRC lexicon)
    reproduce  train + eval + `spherekit reproduce`'s own (bm25s; pyarrow for the parquet loaders)
    triton     the Triton kernels (and NVML, which the GPU benches read the clocks from; nvidia-smi otherwise)

`check_command(argv)` is the command line's one check: `spherekit eval` and `spherekit reproduce` (but `reproduce
list`) look every module of their extra up with importlib.util.find_spec (nothing is imported) and stop with one
line naming the extra and the pip command that adds it to this installation (a local wheel's own path).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from urllib.parse import unquote, urlparse

# import name -> the distribution that provides it (the names pyproject.toml's extras list)
DISTRIBUTIONS = {
    "sentence_transformers": "sentence-transformers",
    "transformers": "transformers",
    "safetensors": "safetensors",
    "datasets": "datasets",
    "accelerate": "accelerate",
    "faiss": "faiss-cpu",
    "scipy": "scipy",
    "sklearn": "scikit-learn",
    "nltk": "nltk",
    "spacy": "spacy",
    "nrclex": "nrclex",
    "bm25s": "bm25s",
    "pyarrow": "pyarrow",
    "triton": "triton",
    "pynvml": "nvidia-ml-py",
}

_ST = ("sentence_transformers", "transformers", "safetensors")
_TRAIN = (*_ST, "datasets", "accelerate")
_EVAL = (*_ST, "faiss", "scipy", "sklearn", "nltk", "spacy", "nrclex")
# extra -> the modules it makes importable
EXTRAS = {
    "st": _ST,
    "train": _TRAIN,
    "eval": _EVAL,
    "reproduce": tuple(dict.fromkeys((*_TRAIN, *_EVAL, "bm25s", "pyarrow"))),
    "triton": ("triton", "pynvml"),
}

# `spherekit <command> [<subcommand>]` -> the extra it needs; `reproduce list` runs without one
COMMANDS = {("eval",): "eval", ("reproduce",): "reproduce", ("bench", "reproduce"): "reproduce"}
_EXEMPT = {("reproduce", "list")}


def missing(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (looked up, not imported)."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def install_command(extra: str) -> str:
    """The pip command that adds `extra` to this installation: from the local wheel or folder it was installed from
    (its direct_url.json), else from the index."""
    try:
        dist = importlib.metadata.distribution("spherekit")
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        direct = {}
    url = urlparse(direct.get("url", ""))
    if url.scheme == "file":
        editable = "-e " if direct.get("dir_info", {}).get("editable") else ""
        return f"pip install {editable}'{unquote(url.path)}[{extra}]'"
    return f"pip install 'spherekit[{extra}]'"


def message(extra: str, what: str, absent: list[str] | None = None) -> str:
    """One line: `what` needs the extra, which of its distributions are absent, and the command that adds them."""
    absent = missing(extra) if absent is None else absent
    names = ", ".join(DISTRIBUTIONS.get(name, name) for name in absent)
    return f"{what} needs the [{extra}] extra ({names} not installed): {install_command(extra)}"


def require(extra: str, what: str) -> None:
    """Stop (SystemExit, one line on stderr, exit status 1) when a module of `extra` is absent."""
    absent = missing(extra)
    if absent:
        raise SystemExit(message(extra, what, absent))


def check_command(argv: list[str]) -> None:
    """The command line's check, before any work: the extra of `spherekit <argv>` (COMMANDS) must be installed.
    A help request needs none."""
    words = tuple(a for a in argv[:2] if not a.startswith("-"))
    if ({"-h", "--help"} & set(argv) and len(words) < 2) or words in _EXEMPT:
        return
    for command in (words[:2], words[:1]):
        if command in COMMANDS:
            require(COMMANDS[command], f"spherekit {' '.join(command)}")
            return


if __name__ == "__main__":  # python -m spherekit._extras: which extras are complete here
    for name in EXTRAS:
        absent = missing(name)
        print(f"{name:10} {'complete' if not absent else 'missing ' + ', '.join(absent)}")
