"""The data of the four experiments, built once per preset and cached under <root>/data/compositional.json.

Offline (the default), from WordNet 3.0 and GCIDE (the paper uses NQ, MRPC-derived near-misses and NanoBEIR):
- concepts are split by their first lemma (seeded hash, 80/20): training triplets use the training part, the
  retrieval suite and the Figure 1 reference pairs the held-out part (no query or relevant entry is trained on);
- training triplet (the NQ analogue): query = 'what does "<lemma>" mean in "<usage example>"?', positive = the
  sense's entry "<lemma names>: <gloss>", negative = the entry of another sense of the same lemma (a hard
  negative, the choice here: the paper does not say how its NQ negatives were made), else a random entry;
- near-misses: spherekit.data.nearmiss (negation / binding / spatial edits of WordNet sentences), split 80/20 by
  anchor; training pairs whose source synset is held out are dropped; structural triplets are (s, s, s~) as in
  the paper; Model B's mixture adds round(f / (1 - f) x #triplets) of them (f = 0.192), and fewer training pairs
  than that is an error (the share is the paper's; a smaller one would be a silent departure);
- the NanoBEIR analogue: sets of `queries_per_set` queries over `corpus_per_set` held-out entries (relevant ones
  plus seeded distractors): wn-examples (usage question -> sense entry), wn-reverse (gloss -> lemma names),
  wn-hypernym (entry -> its hypernyms' entries), gcide-defs (GCIDE definition -> the WordNet senses of that lemma
  and part of speech);
- Figure 1 references: held-out (usage question, entry) positives and (question, random entry) negatives.

With data_dir: the files of the released code's data/ folder as downloaded (radoslavralev/limitations-text-retrieval,
Git LFS), read through the same code path (Model B: Model A's triplets plus the structural share of (s1, s1, s2)):
    nq_triplets_100k.csv                anchor, positive, negative[, category]: the 100,000 NQ triplets (Model A);
                                        shuffled, 10% of them (at most n_reference_pairs) give Figure 1's reference
                                        pairs, as the released training held 10% out
    unified_negatives_train.csv, unified_negatives_test.csv
                                        sentence1, sentence2, category: the near-miss pairs, split 80/20 by the
                                        authors (training pairs -> (s1, s1, s2) triplets; test -> Figures 1 and 3)
    unified_negatives_full.csv          the same columns (extra ones ignored), all 29,820 pairs: used when the test
                                        file is absent, split 80/20 by anchor here
    unified_negatives_with_nq_train.csv anchor, positive, negative, category: Model B's mixture as released; its
                                        rows with anchor == positive are the structural ones. Used for what the
                                        files above do not give: the NQ triplets (its other rows) without
                                        nq_triplets_100k.csv, the training pairs without unified_negatives_train.csv
    nanobeir/<Set>/{corpus.jsonl, queries.jsonl, qrels/test.tsv}   NanoBEIR-en in the BEIR layout
category is cannot_negation | binding_negation | spatial (the family names are accepted too). Rows with an empty
field are dropped, as the released loader does; near-miss rows whose edit failed (a placeholder, or sentence2 of at
most 20 characters) are dropped too, as the paper does, and counted.
"""

from __future__ import annotations

import csv
import hashlib
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..api.files import cached_json
from ..api.config import fingerprint_of

FAMILIES = ("negation", "binding", "spatial")
CATEGORY = {"cannot_negation": "negation", "binding_negation": "binding", "spatial": "spatial",
            **{f: f for f in FAMILIES}}
PLACEHOLDERS = ("negatives_placeholder", "negatives_fix", "negatives are barred")
MIN_CHARS = 20
DATA_FIELDS = ("data_seed", "data_dir", "n_train_triplets", "structural_fraction", "nearmiss_per_family",
               "test_fraction", "queries_per_set", "corpus_per_set", "suite_sets", "n_reference_pairs")


@dataclass
class RetrievalSet:
    """queries[q] has the relevant corpus indices relevant[q] (never empty)."""

    name: str
    queries: list[str]
    corpus: list[str]
    relevant: list[list[int]]

    def __post_init__(self):
        if not self.queries or not self.corpus:
            raise ValueError(f"retrieval set {self.name!r} is empty ({len(self.queries)} queries, "
                             f"{len(self.corpus)} documents)")
        empty = [i for i, r in enumerate(self.relevant) if not r]
        if len(self.relevant) != len(self.queries) or empty:
            raise ValueError(f"retrieval set {self.name!r}: every query needs relevant documents "
                             f"(queries without any: {empty[:5]})")


@dataclass
class CompositionalData:
    train_a: list[list[str]]            # (anchor, positive, negative)
    train_b: list[list[str]]            # train_a plus structural (s, s, s~) rows, shuffled
    nearmiss_test: list[dict]           # anchor, positive, near_miss, family
    suite: list[RetrievalSet]
    reference_pos: list[list[str]]
    reference_neg: list[list[str]]
    stats: dict = field(default_factory=dict)


def _entry(c) -> str:
    return f"{', '.join(c.lemmas[:3])}: {c.definition}"


def _held_out(lemma: str, seed: int, fraction: float) -> bool:
    h = int(hashlib.sha256(f"{seed}:{lemma.lower()}".encode()).hexdigest()[:8], 16)
    return h % 1000 < fraction * 1000


def _question(c) -> str | None:
    for example in c.examples:
        for lemma in c.lemmas:
            if lemma.lower() in example.lower() and len(example) >= MIN_CHARS:
                return f'what does "{lemma}" mean in "{example}"?'
    return None


def _offline_triplets(wn, train, rng, n):
    rows = []
    pool = [c for c in train if _question(c)]
    rng.shuffle(pool)
    for c in pool[:n]:
        others = [o for o in wn.synsets_of(c.lemmas[0]) if o.synset_id != c.synset_id]
        neg = others[0] if others else rng.choice(train)
        rows.append([_question(c), _entry(c), _entry(neg)])
    return rows


def _sample_set(name, pairs, distractors, cfg, rng) -> RetrievalSet:
    """pairs: (query, [relevant docs]); corpus = their relevant docs + distractors up to corpus_per_set."""
    rng.shuffle(pairs)
    pairs = pairs[:cfg.queries_per_set]
    corpus: dict[str, int] = {}
    relevant = [[corpus.setdefault(d, len(corpus)) for d in docs] for _, docs in pairs]
    extra = [d for d in dict.fromkeys(distractors) if d not in corpus]
    for d in rng.sample(extra, min(len(extra), max(0, cfg.corpus_per_set - len(corpus)))):
        corpus.setdefault(d, len(corpus))
    return RetrievalSet(name, [q for q, _ in pairs], list(corpus), relevant)


def _offline_suite(wn, held, cfg, rng) -> list[RetrievalSet]:
    entries = [_entry(c) for c in held]
    builders = {
        "wn-examples": lambda: ([(_question(c), [_entry(c)]) for c in held if _question(c)], entries),
        "wn-reverse": lambda: ([(c.definition, ["; ".join(c.lemmas)]) for c in held],
                               ["; ".join(c.lemmas) for c in held]),
        "wn-hypernym": lambda: ([(_entry(c), [_entry(wn.concept(h)) for h in c.hypernyms]) for c in held
                                 if c.hypernyms], entries),
        "gcide-defs": lambda: _gcide_pairs(wn, held, entries),
    }
    out = []
    for name in cfg.suite_sets:
        if name not in builders:
            raise ValueError(f"suite_sets: unknown set {name!r}; valid sets: {', '.join(builders)}")
        pairs, distractors = builders[name]()
        out.append(_sample_set(name, pairs, distractors, cfg, rng))
    return out


def _gcide_pairs(wn, held, entries):
    from ...data.gcide import load_gcide

    gcide = load_gcide()
    by_term: dict[tuple, list[str]] = {}
    for c in held:
        by_term.setdefault((c.lemmas[0].lower(), c.pos), []).append(_entry(c))
    pairs = []
    for (term, pos), docs in by_term.items():
        senses = [s for s in gcide.senses_of(term, pos, include_wordnet_derived=False) if len(s.definition) >= 20]
        if senses:
            pairs.append((senses[0].definition, docs))
    return pairs, entries


def _build_offline(cfg) -> dict:
    from ...data.nearmiss import build_nearmiss
    from ...data.wordnet import load_wordnet

    rng = random.Random(cfg.data_seed)
    wn = load_wordnet()
    concepts = [c for c in wn if c.lemmas and len(c.definition) >= MIN_CHARS]
    held = [c for c in concepts if _held_out(c.lemmas[0], cfg.data_seed, cfg.test_fraction)]
    held_ids = {c.synset_id for c in held}
    train = [c for c in concepts if c.synset_id not in held_ids]
    triplets = _offline_triplets(wn, train, rng, cfg.n_train_triplets)
    nm = build_nearmiss(n_per_family=cfg.nearmiss_per_family, seed=cfg.data_seed, test_fraction=cfg.test_fraction)
    nm_train = [it for it in nm.train if it.source.split(":", 1)[-1] not in held_ids]
    pairs = [(it.anchor, it.near_miss, it.family) for it in nm_train]
    test = [{"anchor": it.anchor, "positive": it.positive, "near_miss": it.near_miss, "family": it.family}
            for it in nm.test]
    ref = [(_question(c), _entry(c)) for c in held if _question(c)]
    rng.shuffle(ref)
    ref = ref[:cfg.n_reference_pairs]
    neg = [(q, _entry(rng.choice(held))) for q, _ in ref]
    suite = _offline_suite(wn, held, cfg, rng)
    return {"triplets": triplets, "pairs": pairs, "test": test, "suite": [asdict(s) for s in suite],
            "reference_pos": ref, "reference_neg": neg,
            "dropped": {"nearmiss_train_held_out_source": len(nm.train) - len(nm_train)}}


RELEASED = {"triplets": "nq_triplets_100k.csv", "train": "unified_negatives_train.csv",
            "test": "unified_negatives_test.csv", "full": "unified_negatives_full.csv",
            "mixture": "unified_negatives_with_nq_train.csv"}
PAIR_COLUMNS, TRIPLET_COLUMNS = ("sentence1", "sentence2", "category"), ("anchor", "positive", "negative")


def _rows(path: Path, columns: tuple[str, ...]):
    """(line number, {column: stripped text}) of a CSV with at least `columns` (others are ignored)."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing} (need {', '.join(columns)})")
        for line, row in enumerate(reader, start=2):
            yield line, {c: (row.get(c) or "").strip() for c in (*columns, "category")}


def _family(path: Path, line: int, category: str) -> str:
    if category not in CATEGORY:
        raise ValueError(f"{path}, line {line}: category {category!r} is not one of {sorted(CATEGORY)}")
    return CATEGORY[category]


def _failed_edit(s1: str, s2: str) -> bool:
    return not s1 or any(p in s2 for p in PLACEHOLDERS) or len(s2) <= MIN_CHARS


def read_nearmiss_csv(path) -> tuple[list[tuple[str, str, str]], int]:
    """(sentence1, sentence2, family) rows of a released near-miss CSV and the number dropped (failed edits)."""
    path, rows, dropped = Path(path), [], 0
    for line, row in _rows(path, PAIR_COLUMNS):
        family = _family(path, line, row["category"])
        if _failed_edit(row["sentence1"], row["sentence2"]):
            dropped += 1
        else:
            rows.append((row["sentence1"], row["sentence2"], family))
    return rows, dropped


def read_triplets_csv(path) -> tuple[list[list[str]], list[tuple[str, str, str]], int]:
    """A released triplet CSV: (its (anchor, positive, negative) rows with anchor != positive, its structural rows
    (anchor == positive) as (anchor, negative, family) pairs, the number of rows dropped (an empty field or a failed
    edit))."""
    path, triplets, pairs, dropped = Path(path), [], [], 0
    for line, row in _rows(path, TRIPLET_COLUMNS):
        a, p, n = row["anchor"], row["positive"], row["negative"]
        if not (a and p and n):
            dropped += 1
        elif a != p:
            triplets.append([a, p, n])
        elif _failed_edit(a, n):
            _family(path, line, row["category"])
            dropped += 1
        else:
            pairs.append((a, n, _family(path, line, row["category"])))
    return triplets, pairs, dropped


def _released_files(folder: Path) -> dict[str, Path]:
    found = {k: folder / name for k, name in RELEASED.items() if (folder / name).is_file()}
    if "triplets" not in found and "mixture" not in found:
        raise FileNotFoundError(f"{folder}: no {RELEASED['triplets']} (or {RELEASED['mixture']}): the NQ triplets")
    if "test" not in found and "full" not in found:
        raise FileNotFoundError(f"{folder}: no {RELEASED['test']} (or {RELEASED['full']}): the held-out near-misses")
    return found


def _released_pairs(files: dict, mixture_pairs, cfg) -> tuple[list, list, int]:
    """(training pairs, test pairs, dropped): the authors' split when their test file is there, else 80/20 by
    anchor of the full file."""
    from ...data.nearmiss import NearMiss, split_by_anchor

    if "test" in files:
        test, dropped = read_nearmiss_csv(files["test"])
        if "train" in files:
            train, more = read_nearmiss_csv(files["train"])
            return train, test, dropped + more
        if mixture_pairs is None:
            raise FileNotFoundError(f"no {RELEASED['train']} (or {RELEASED['mixture']}) beside {files['test']}: the "
                                    "training near-misses")
        return mixture_pairs, test, dropped
    rows, dropped = read_nearmiss_csv(files["full"])
    items = [NearMiss(a, a, b, f, "", "identity", "csv") for a, b, f in rows]
    tr, te = split_by_anchor(items, cfg.test_fraction, cfg.data_seed)
    return [(i.anchor, i.near_miss, i.family) for i in tr], [(i.anchor, i.near_miss, i.family) for i in te], dropped


def _build_from_dir(cfg) -> dict:
    from ...data.datasets.beir import load_nanobeir

    folder, rng = Path(cfg.data_dir), random.Random(cfg.data_seed)
    files = _released_files(folder)
    rows, mixture_pairs, dropped = [], None, 0
    if "mixture" in files and not {"triplets", "train"} <= set(files):  # it gives what the other files do not
        rows, mixture_pairs, dropped = read_triplets_csv(files["mixture"])
    if "triplets" in files:
        rows, _, more = read_triplets_csv(files["triplets"])
        dropped += more
    train, test_rows, more = _released_pairs(files, mixture_pairs, cfg)
    rows = rows[:cfg.n_train_triplets + cfg.n_reference_pairs]
    rng.shuffle(rows)
    n_ref = min(cfg.n_reference_pairs, len(rows) // 10)
    ref_rows, triplets = rows[:n_ref], rows[n_ref:]
    suite = []
    for name, beir in load_nanobeir(folder / "nanobeir").items():
        queries, corpus, relevant = beir.retrieval_inputs()
        suite.append(asdict(RetrievalSet(name, queries, corpus, [sorted(r) for r in relevant])))
    test = [{"anchor": a, "positive": a, "near_miss": b, "family": f} for a, b, f in test_rows]
    positives = [r[1] for r in ref_rows]
    return {"triplets": triplets, "pairs": train, "test": test, "suite": suite,
            "reference_pos": [[r[0], r[1]] for r in ref_rows],
            "reference_neg": [[r[0], rng.choice(positives)] for r in ref_rows],
            "files": sorted(p.name for p in files.values()), "dropped": {"empty_or_failed_edit_rows": dropped + more}}


def structural_count(cfg, n_triplets: int) -> int:
    """The structural triplets Model B adds to n_triplets so that they are structural_fraction of its rows."""
    return round(cfg.structural_fraction / (1 - cfg.structural_fraction) * n_triplets)


def _mixture(triplets, pairs, cfg, seed) -> list[list[str]]:
    """Model A's triplets plus structural_count (s, s, s~) rows from the training pairs, shuffled; an error when
    there are fewer pairs than that (Model B's structural share is the paper's, never silently smaller)."""
    want = structural_count(cfg, len(triplets))
    if want > len(pairs):
        raise ValueError(f"Model B needs {want:,} structural triplets ({cfg.structural_fraction:.1%} of "
                         f"{len(triplets) + want:,} rows) but only {len(pairs):,} near-miss training pairs exist: "
                         f"raise nearmiss_per_family (now {cfg.nearmiss_per_family}; about "
                         f"{math.ceil(cfg.nearmiss_per_family * want / max(1, len(pairs))):,} would do) or lower "
                         f"n_train_triplets (now {cfg.n_train_triplets:,})")
    rng = random.Random(f"{seed}:mix")
    struct = [[a, a, b] for a, b, _ in pairs]
    rng.shuffle(struct)
    rows = [list(t) for t in triplets] + struct[:want]
    rng.shuffle(rows)
    return rows


def load_data(cfg, root) -> CompositionalData:
    """The data of `cfg` (read from <root>/data/compositional.json when it was built with the same settings)."""
    path = Path(root) / "data" / "compositional.json"
    key = fingerprint_of(cfg, DATA_FIELDS)
    raw = cached_json(path, key, lambda: _build_from_dir(cfg) if cfg.data_dir else _build_offline(cfg))
    suite = [RetrievalSet(**s) for s in raw["suite"]]
    train_b = _mixture(raw["triplets"], raw["pairs"], cfg, cfg.data_seed)
    structural = len(train_b) - len(raw["triplets"])
    stats = {**({"files": raw["files"]} if "files" in raw else {}),
             "train_triplets": len(raw["triplets"]), "structural_triplets": structural,
             "structural_share": round(structural / max(1, len(train_b)), 4),
             "nearmiss_train_pairs": len(raw["pairs"]),
             "nearmiss_test": {f: sum(t["family"] == f for t in raw["test"]) for f in FAMILIES},
             "suite": {s.name: {"queries": len(s.queries), "corpus": len(s.corpus)} for s in suite},
             "reference_pairs": len(raw["reference_pos"]), "dropped": raw["dropped"]}
    return CompositionalData(raw["triplets"], train_b, raw["test"], suite, raw["reference_pos"],
                             raw["reference_neg"], stats)
