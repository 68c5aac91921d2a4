"""The WordNet 3.0 database as nltk's WordNetCorpusReader wants it: <nltk_data>/corpora/wordnet/.

Debian's wordnet-base + wordnet-sense-index put the Princeton database under /usr/share/wordnet, but
without the `lexnames` file (number -> lexicographer file name) that nltk reads first. It is generated
here from the lexnames(5WN) man page (/usr/share/man/man5/lexnames.5WN.gz), whose table lists the 45
files of WordNet 3.0 as "NN<TAB>name<TAB>contents"; the third column of `lexnames` is the syntactic
category (1 noun, 2 verb, 3 adjective, 4 adverb), taken from the name's prefix. When the man page is
absent the fixed WordNet 3.0 table below is used (a test checks that both agree).
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

from .._atomic import atomic_dir
from .._store import nltk_data_dir, nltk_data_dirs

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
LEXNAMES_MAN_PAGE = Path("/usr/share/man/man5/lexnames.5WN.gz")
DEBIAN_LICENSE = Path("/usr/share/doc/wordnet-base/copyright")

# What WordNetCorpusReader opens (its _FILES), minus `lexnames`, which is generated.
DATABASE_FILES = (
    "cntlist.rev", "index.sense",
    "index.adj", "index.adv", "index.noun", "index.verb",
    "data.adj", "data.adv", "data.noun", "data.verb",
    "adj.exc", "adv.exc", "noun.exc", "verb.exc",
)
OPTIONAL_FILES = ("cntlist",)
REQUIRED_FILES = DATABASE_FILES + ("lexnames",)

_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

LEXNAMES_WN30 = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
    "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
    "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl",
)


def lexnames_from_man_page(path: str | Path = LEXNAMES_MAN_PAGE) -> list[str]:
    """The lexicographer file names, in file-number order, parsed from the lexnames(5WN) man page."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(\d\d)\t(\S+)\s*\t", line)
        if m and m.group(2).split(".")[0] in _CATEGORY:
            rows[int(m.group(1))] = m.group(2)
    if not rows or sorted(rows) != list(range(len(rows))):
        raise ValueError(f"{path}: no complete lexicographer-file table found (got numbers {sorted(rows)})")
    return [rows[i] for i in range(len(rows))]


def lexnames_text(names) -> str:
    """The `lexnames` file: "NN<TAB>name<TAB>category" per line (see lexnames(5WN))."""
    return "".join(f"{i:02d}\t{n}\t{_CATEGORY[n.split('.')[0]]}\n" for i, n in enumerate(names))


def is_complete(root: Path) -> bool:
    """True when `root` (a corpora/wordnet folder) holds every file WordNetCorpusReader needs."""
    return root.is_dir() and all((root / f).is_file() and (root / f).stat().st_size > 0 for f in REQUIRED_FILES)


def find_wordnet_root() -> Path | None:
    """The first complete corpora/wordnet folder (or corpora/wordnet.zip from nltk.download) on the
    search path nltk_data_dirs(); None when there is none."""
    for base in nltk_data_dirs():
        root = base / "corpora" / "wordnet"
        if is_complete(root):
            return root
        z = base / "corpora" / "wordnet.zip"
        if z.is_file():
            return z
    return None


def debian_source_ok(src: Path = DEBIAN_WORDNET_DIR) -> bool:
    return all((src / f).is_file() for f in DATABASE_FILES)


def missing_source_files(src: Path = DEBIAN_WORDNET_DIR) -> list[str]:
    return [f for f in DATABASE_FILES if not (src / f).is_file()]


def install_from_debian(src: Path = DEBIAN_WORDNET_DIR, dest_base: Path | None = None,
                        man_page: Path = LEXNAMES_MAN_PAGE) -> Path:
    """Copy the Debian WordNet files into <dest_base>/corpora/wordnet (atomically: a complete folder
    appears in one rename) and write `lexnames`. Returns the folder."""
    src = Path(src)
    missing = missing_source_files(src)
    if missing:
        raise FileNotFoundError(f"{src} lacks {', '.join(missing)} (Debian packages wordnet-base, wordnet-sense-index)")
    names = lexnames_from_man_page(man_page) if Path(man_page).is_file() else list(LEXNAMES_WN30)
    dest = Path(dest_base or nltk_data_dir()) / "corpora" / "wordnet"
    with atomic_dir(dest) as tmp:
        for f in DATABASE_FILES + OPTIONAL_FILES:
            if (src / f).is_file():
                shutil.copyfile(src / f, tmp / f)
        (tmp / "lexnames").write_text(lexnames_text(names), encoding="utf-8")
        if DEBIAN_LICENSE.is_file():
            shutil.copyfile(DEBIAN_LICENSE, tmp / "LICENSE")
    return dest
