"""STS12-STS16 in SentEval's layout (data/downstream/STS/STS1x-en-test/, DefSent+ (arXiv:2405.16153) footnote 9).

Each subset NAME is two files in the year's folder:
    STS.input.NAME.txt   one pair per line: sentence1 <TAB> sentence2 [<TAB> extra columns, ignored]
    STS.gs.NAME.txt      one gold score (0-5) per line, aligned with the input; an empty line means
                         "no gold score" and the pair is dropped (as SentEval does)

    load_sts("data/downstream/STS/STS12-en-test", year=12) -> {"MSRpar": [STSPair, ...], ...}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._io import DatasetFormatError, read_lines, require_file, to_float

SUBSETS = {
    12: ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    13: ("FNWN", "headlines", "OnWN"),
    14: ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    15: ("answers-forums", "answers-students", "belief", "headlines", "images"),
    16: ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}


@dataclass(frozen=True, slots=True)
class STSPair:
    sentence1: str
    sentence2: str
    score: float


def load_sts_subset(folder, name: str) -> list[STSPair]:
    """One subset: STS.input.<name>.txt + STS.gs.<name>.txt (see the module docstring)."""
    folder = Path(folder)
    inp = require_file(folder / f"STS.input.{name}.txt")
    gs = require_file(folder / f"STS.gs.{name}.txt")
    pairs_raw = []
    for line, text in read_lines(inp):
        parts = text.split("\t")
        if len(parts) < 2:
            raise DatasetFormatError(inp, line, "sentence2", "expected 'sentence1<TAB>sentence2', found no tab")
        for field, value in (("sentence1", parts[0]), ("sentence2", parts[1])):
            if not value.strip():
                raise DatasetFormatError(inp, line, field, "empty sentence")
        pairs_raw.append((parts[0].strip(), parts[1].strip()))
    scores = list(read_lines(gs))
    if len(scores) != len(pairs_raw):
        raise DatasetFormatError(gs, None, "score", f"{len(scores)} score lines for {len(pairs_raw)} input lines in {inp.name}")
    out = []
    for (s1, s2), (line, text) in zip(pairs_raw, scores):
        if not text.strip():
            continue
        out.append(STSPair(s1, s2, to_float(gs, line, "score", text.strip())))
    if not out:
        raise DatasetFormatError(gs, None, "score", "no pair has a gold score")
    return out


def load_sts(folder, year: int | None = None, subsets=None) -> dict[str, list[STSPair]]:
    """All subsets of one STS year folder: `subsets`, else SentEval's list for `year` (12-16), else every
    STS.input.*.txt found (sorted)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"STS folder not found: {folder}")
    if subsets is None and year is not None:
        year = int(str(year)[-2:])
        if year not in SUBSETS:
            raise ValueError(f"year must be one of {sorted(SUBSETS)} (STS12-16), got {year}")
        subsets = SUBSETS[year]
    if subsets is None:
        subsets = sorted(p.name[len("STS.input."):-len(".txt")] for p in folder.glob("STS.input.*.txt"))
        if not subsets:
            raise FileNotFoundError(f"no STS.input.*.txt files in {folder}")
    return {name: load_sts_subset(folder, name) for name in subsets}


def as_evaluator_subsets(data: dict[str, list[STSPair]]) -> dict[str, tuple[list[str], list[str], list[float]]]:
    """{subset: (sentences1, sentences2, scores)} for spherekit.evaluation.evaluators.STSEvaluator."""
    return {k: ([p.sentence1 for p in v], [p.sentence2 for p in v], [p.score for p in v]) for k, v in data.items()}
