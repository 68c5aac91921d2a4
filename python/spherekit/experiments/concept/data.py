"""Training rows and evaluation sets of the concept-equivalence reproduction (paper section 4.5).

Training (one model per condition, one set of rows for all conditions):
  t2d  term-definition pairs of WordNet and the second source (GCIDE offline; Wiktionary from a dump),
       headwords masked; each row carries up to k hard negatives of its definition (appendix G's five rules,
       spherekit.data.hard_negatives, built as cfg.swap_negatives and cfg.negation_scope say; replacements
       drawn from training pairs only), and a second set with the other swap construction (B1-nearest's).
  syn  WordNet synonym pairs (and the dump's, with Wiktionary).
  d2d  cross-source definition pairs: a WordNet definition and a second-source definition of the same term,
       up to 6 per term, taken in order of max(i, j) over the two sources' senses (most frequent first).
All three exclude every test and dev concept, term and test definition of every evaluated split
(spherekit.data.splits.check_decontaminated is run on each). Each view is shuffled with the seed and
cycled to steps x batch rows. Appendix G: "each rule is applied once per positive definition; all generated
negatives are used": a row's negatives are its definition's generated negatives (at most one per rule), all of
them when k >= their number (k = 5, the paper's), else k of them drawn in a seeded order; the slots left empty
hold PADDING and the row's count of real negatives (its "label" column, ConceptEquivalenceLoss's labels) masks
them out of the loss. Nothing is repeated to fill a row (stats count the masked slots).

Source-holdout regime (section 4.5's third split, for cfg.source_holdout_conditions): t2d rows from the second
source alone (make_split("source-holdout"): its terms and definitions decontaminated against the WordNet test
synsets), with hard negatives drawn the same way; no syn view (GCIDE has no synonym pairs) and no d2d view (it
would show the model WordNet definitions). Rows come from their own seeded stream, so the main rows do not
depend on whether this regime is built.

Evaluation: the test pairs of each split with their stress-test negatives (generated once, by the same rules as the
training negatives; swaps drawn from the split's test pairs, and with nearest swaps from its training pairs too);
with random swaps also a harder stress split, the three swap rules with nearest replacements (EvalSet.nearest),
plus, when data_dir has them, the NP paraphrase suite and the DBpedia benchmark. stats["eval"][split]["rules"]
counts each rule's negatives there.

data_dir layout (the paper's data in its published formats, each part optional):
    wiktionary/*.jsonl[.gz] or kaikki*.jsonl[.gz]   Wiktextract dump: replaces GCIDE as the second source
    np_paraphrase.jsonl | np_paraphrase.tsv | np_paraphrase/*.jsonl | np_paraphrase/*.tsv   the NP suite
    dbpedia_gap/pairs.jsonl (+ dbpedia_gap/candidates.txt)            the DBpedia semantic-gap benchmark
Everything is cached under <root>/data/<fingerprint>/ (atomic), keyed by the settings that change it.
"""

from __future__ import annotations

import hashlib
import json
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ...data.records import TermDefinition, definition_key, term_key
from .spec import SOURCE_HOLDOUT

PADDING = ""          # the text of an empty negative slot (masked out of the loss by the row's count)
COUNT = "label"       # the dataset column of each row's number of real hard negatives (the collator's labels)
MASKED = "masked"     # stats["hard_negatives"]["row_slots"]: the empty slots
NEAREST_SPLIT = "nearest swaps"  # metric scope of the harder stress split ("in-domain/nearest swaps/ROC-AUC (...)")


def negative_keys(k: int, swaps: str) -> list[str]:
    """The row keys of one swap construction's k negative columns and its count column."""
    return [f"t2d_{swaps}_negative_{j}" for j in range(1, k + 1)] + [f"t2d_{swaps}_count"]


@dataclass
class EvalSet:
    kind: str
    records: list[TermDefinition]
    negatives: list          # HardNegative records for the stress suite
    rule_stats: dict
    nearest: tuple | None = None  # (HardNegative records, rule stats) of the harder split: nearest swaps


@dataclass
class ConceptData:
    rows: dict[str, list[str]]       # column name -> values (syn_*, t2d_*, d2d_*)
    k: int
    eval_sets: dict[str, EvalSet]
    np_items: list | None = None
    dbpedia: object | None = None
    stats: dict = field(default_factory=dict)
    source_holdout_rows: dict[str, list[str]] | None = None   # t2d_* columns of the source-holdout regime

    def columns(self, swaps: str | None, source_holdout: bool = False) -> list[str]:
        """The dataset's columns: without hard negatives (swaps None), or with those of one swap construction
        (its k negative columns, then COUNT)."""
        negs = self._negative_names() if swaps else []
        if source_holdout:
            return ["t2d_anchor", "t2d_positive", *negs]
        return ["syn_anchor", "syn_positive", "t2d_anchor", "t2d_positive", *negs, "d2d_anchor", "d2d_positive"]

    def _negative_names(self) -> list[str]:
        """The dataset's names of the k negative columns and of COUNT (the collator's labels)."""
        return [*[f"t2d_negative_{j}" for j in range(1, self.k + 1)], COUNT]

    def dataset(self, swaps: str | None, source_holdout: bool = False):
        """A datasets.Dataset of the rows (main or source-holdout regime), with the t2d negatives of `swaps`
        ("random" | "nearest") or without any (None)."""
        from datasets import Dataset

        rows = self.source_holdout_rows if source_holdout else self.rows
        if rows is None:
            raise ValueError("this data was built without the source-holdout regime (no source_holdout_conditions)")
        keys = dict(zip(self._negative_names(), negative_keys(self.k, swaps))) if swaps else {}
        if swaps and keys[COUNT] not in rows:
            raise ValueError(f"this data holds no {swaps!r} training negatives (it was built for swaps "
                             f"{sorted(k.split('_')[1] for k in rows if k.endswith('_count'))})")
        return Dataset.from_dict({c: rows[keys.get(c, c)] for c in self.columns(swaps, source_holdout)})


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def data_fingerprint(cfg, world: int = 1) -> str:
    keys = ("data_seed", "data_dir", "second_source", "eval_splits", "n_test", "n_test_head", "eval_limit",
            "negatives_per_pair", "swap_negatives", "negation_scope", "d2d_max_per_term", "steps", "batch_size")
    return _digest({**{k: getattr(cfg, k) for k in keys}, "world": world, "version": 3,
                    "source_holdout": bool(cfg.source_holdout_conditions)})


# ---------------------------------------------------------------- sources

def find_wiktionary(data_dir) -> Path | None:
    if data_dir is None:
        return None
    root = Path(data_dir)
    hits = sorted(root.glob("wiktionary/*.jsonl*")) + sorted(root.glob("kaikki*.jsonl*"))
    return hits[0] if hits else None


def _np_path(root: Path) -> Path | None:
    for p in (root / "np_paraphrase.jsonl", root / "np_paraphrase.tsv"):
        if p.is_file():
            return p
    hits = sorted((root / "np_paraphrase").glob("*.jsonl")) + sorted((root / "np_paraphrase").glob("*.tsv"))
    return hits[0] if hits else None


def load_extra_suites(data_dir):
    """(NP paraphrase items or None, DBpediaGap or None) from data_dir (module docstring)."""
    if data_dir is None:
        return None, None
    root = Path(data_dir)
    np_items = dbpedia = None
    path = _np_path(root)
    if path is not None:
        from ...data.datasets.np_paraphrase import load_np_paraphrase

        np_items = load_np_paraphrase(path)
    pairs = root / "dbpedia_gap" / "pairs.jsonl"
    if pairs.is_file():
        from ...data.datasets.dbpedia_gap import load_dbpedia_gap

        cands = root / "dbpedia_gap" / "candidates.txt"
        dbpedia = load_dbpedia_gap(pairs, "test", cands if cands.is_file() else None)
    return np_items, dbpedia


class _Held:
    """Concepts, terms and definitions that training must not contain."""

    def __init__(self, splits):
        self.concepts, self.terms, self.defs = set(), set(), set()
        for s in splits:
            for p in list(s.test) + list(s.dev):
                self.concepts.add(p.concept_id)
                self.terms.add(term_key(p.term))
            self.defs |= {definition_key(p.definition) for p in s.test}

    def pair_ok(self, p) -> bool:
        return (p.concept_id not in self.concepts and term_key(p.term) not in self.terms
                and definition_key(p.definition) not in self.defs)

    def synonym_ok(self, s) -> bool:
        return (s.concept_id not in self.concepts and term_key(s.term_a) not in self.terms
                and term_key(s.term_b) not in self.terms)


def cross_source_pairs(pairs, second: str, max_per_term: int) -> list[tuple[str, str]]:
    """(WordNet definition, second-source definition) of the same term, <= max_per_term per term, in order
    of max(i, j) over the two sources' senses (as spherekit.data.gcide.cross_source_definition_pairs, but on
    the masked, decontaminated training pairs)."""
    by_term: dict[str, dict[str, list[str]]] = {}
    for p in pairs:
        if p.source in ("wordnet", second):
            by_term.setdefault(term_key(p.term), {}).setdefault(p.source, []).append(p.definition)
    out = []
    for term in sorted(by_term):
        a, b = by_term[term].get("wordnet", []), by_term[term].get(second, [])
        order = sorted(((i, j) for i in range(len(a)) for j in range(len(b))), key=lambda ij: (max(ij), ij))
        n = 0
        for i, j in order:
            if n >= max_per_term:
                break
            if definition_key(a[i]) != definition_key(b[j]):
                out.append((a[i], b[j]))
                n += 1
    return out


# ---------------------------------------------------------------- build

def _cycle(items: list, n: int, rng: random.Random) -> list:
    if not items:
        raise ValueError("a training view has no pairs after decontamination")
    order = items[:]
    out = []
    while len(out) < n:
        rng.shuffle(order)
        out.extend(order[: n - len(out)])
    return out


def _rules(cfg, swaps: str | None = None) -> dict:
    """make_hard_negatives' construction options of this config (swaps: another swap construction)."""
    return {"swap": swaps or cfg.swap_negatives, "negation": cfg.negation_scope}


def _negatives_for_rows(rows, k, negs, rule_stats, seed):
    """Each row's generated negatives `negs` (module docstring: at most k, no repeats), as k columns padded with
    PADDING and the rows' counts, with the generation's and the slots' per-rule counts."""
    from ...data.hard_negatives import RULES

    by_pair: dict[tuple, list] = {}
    for n in sorted(negs, key=lambda n: RULES.index(n.rule)):  # a pair's negatives in rule order, then shuffled
        by_pair.setdefault((n.term, n.definition), []).append(n)
    rng = random.Random(f"{seed}:row-negatives")
    columns, counts = [[] for _ in range(k)], []
    used: dict[str, int] = {}
    for r in rows:
        cands = list(by_pair.get((r.term, r.definition), []))
        rng.shuffle(cands)
        cands = cands[:k]
        for j in range(k):
            text, rule = (cands[j].negative, cands[j].rule) if j < len(cands) else (PADDING, MASKED)
            columns[j].append(text)
            used[rule] = used.get(rule, 0) + 1
        counts.append(len(cands))
    return columns, counts, {"generation": rule_stats, "row_slots": used}


def _negative_rows(cfg, t2d_rows, pool, wn, progress: bool) -> tuple[dict, dict]:
    """The rows' negative columns and counts (negative_keys) of every swap construction (cfg.swap_kinds), and the
    stats of each. The parsed rules (antonym flip, negation) do not depend on the swaps: they run once."""
    from ...data.hard_negatives import PARSED_RULES, RULES, SWAP_RULES, make_hard_negatives

    unique = list({(r.term, r.definition): r for r in t2d_rows}.values())
    rows, stats, parsed = {}, {}, None
    for swaps in cfg.swap_kinds():
        rules = SWAP_RULES if parsed else RULES
        negs, rule_stats = make_hard_negatives(unique, rules, seed=cfg.data_seed, pool=pool, wordnet=wn,
                                               progress=progress, **_rules(cfg, swaps))
        if parsed is None:
            parsed = ([n for n in negs if n.rule in PARSED_RULES],
                      {r: v for r, v in rule_stats.items() if r in PARSED_RULES})
        else:
            negs, rule_stats = parsed[0] + negs, {**parsed[1], **rule_stats}
        columns, counts, stats[swaps] = _negatives_for_rows(t2d_rows, cfg.negatives_per_pair, negs, rule_stats,
                                                            cfg.data_seed)
        rows.update(zip(negative_keys(cfg.negatives_per_pair, swaps), [*columns, counts]))
    return rows, stats


def _negative_stats(stats: dict, primary: str) -> dict:
    """stats["hard_negatives"]: the primary construction's counts, the others' under "other_swaps"."""
    others = {k: v for k, v in stats.items() if k != primary}
    return {**stats[primary], **({"other_swaps": others} if others else {})}


def _source_holdout(cfg, second: str, common: dict, wn, n_rows: int, progress: bool):
    """(split, t2d rows with negative columns, stats) of the source-holdout regime (module docstring)."""
    from ...data.splits import make_split

    sh = make_split(SOURCE_HOLDOUT, cfg.data_seed, n_test=cfg.n_test, train_source=second, **common)
    t2d = _cycle(list(sh.train), n_rows, random.Random(f"{cfg.data_seed}:{SOURCE_HOLDOUT}"))
    negatives, neg_stats = _negative_rows(cfg, t2d, sh.train, wn, progress)
    rows = {"t2d_anchor": [p.term for p in t2d], "t2d_positive": [p.definition for p in t2d], **negatives}
    return sh, rows, {"train_pairs": len(sh.train), "hard_negatives": _negative_stats(neg_stats,
                                                                                      cfg.swap_negatives)}


def _eval_sets(cfg, splits: dict, wn, progress: bool, train: dict) -> dict[str, EvalSet]:
    """Each evaluated split's test pairs (eval_limit applied) with its stress negatives, generated once. The swap
    rules replace a test definition by one of the split's test pairs and, with nearest swaps, of the training
    pairs of its model too (train[split]): a nearest neighbour among a thousand test glosses is rarely near. With
    random swaps the nearest ones are built too, for the swap rules only: the harder split (EvalSet.nearest)."""
    from ...data.hard_negatives import SWAP_RULES, make_hard_negatives

    out = {}
    for kind in [k for k in (*cfg.eval_splits, SOURCE_HOLDOUT) if k in splits]:
        test = list(splits[kind].test)
        records = test[: cfg.eval_limit] if cfg.eval_limit else test
        near_pool = test + list(train[kind])
        pool = near_pool if cfg.swap_negatives == "nearest" else test
        negs, rule_stats = make_hard_negatives(records, seed=cfg.data_seed, pool=pool, wordnet=wn, progress=progress,
                                               **_rules(cfg))
        nearest = None
        if cfg.swap_negatives != "nearest":
            nearest = make_hard_negatives(records, SWAP_RULES, seed=cfg.data_seed, pool=near_pool, wordnet=wn,
                                          progress=progress, **_rules(cfg, "nearest"))
        out[kind] = EvalSet(kind, records, negs, rule_stats, nearest)
    return out


def build(cfg, wn=None, progress: bool = True, world: int = 1) -> ConceptData:
    """Build training rows and evaluation sets (module docstring); no caching here (see load_or_build)."""
    from ...data.splits import Split, check_decontaminated, make_split
    from ...data.wordnet import load_wordnet

    np_items, dbpedia = load_extra_suites(cfg.data_dir)  # first: a malformed file fails before any work
    wn = wn or load_wordnet()
    wiktionary = find_wiktionary(cfg.data_dir)
    second = "wiktionary" if wiktionary is not None else cfg.second_source
    gcide = None
    if second == "gcide":
        from ...data.gcide import load_gcide

        gcide = load_gcide()
    elif wiktionary is None:
        raise FileNotFoundError("second_source 'wiktionary' needs a Wiktextract dump: put it under "
                                "<data_dir>/wiktionary/ (kaikki.org JSONL)")
    common = dict(wordnet=wn, gcide=gcide, wiktionary=str(wiktionary) if wiktionary else None)
    in_domain = make_split("in-domain", cfg.data_seed, n_test=cfg.n_test, sources=("wordnet", second), **common)
    splits = {"in-domain": in_domain}
    if "head-holdout" in cfg.eval_splits:
        splits["head-holdout"] = make_split("head-holdout", cfg.data_seed, n_test=cfg.n_test_head, **common)
    held = _Held(splits.values())
    t2d = [p for p in in_domain.train if held.pair_ok(p)]
    syn = [s for s in in_domain.train_synonyms if held.synonym_ok(s)]
    if wiktionary is not None:
        from ...data import wiktionary as wk

        syn += [s for s in wk.synonym_pairs(wk.load_wiktionary(wiktionary)) if held.synonym_ok(s)]
    d2d = cross_source_pairs(t2d, second, cfg.d2d_max_per_term)
    for kind, s in splits.items():
        check_decontaminated(Split(kind, cfg.data_seed, t2d, s.dev, s.test, syn))

    n_rows = cfg.steps * cfg.batch_size * world
    rng = random.Random(cfg.data_seed)
    syn_rows, t2d_rows, d2d_rows = _cycle(syn, n_rows, rng), _cycle(t2d, n_rows, rng), _cycle(d2d, n_rows, rng)
    negatives, neg_stats = _negative_rows(cfg, t2d_rows, t2d, wn, progress)
    rows = {"syn_anchor": [s.term_a for s in syn_rows], "syn_positive": [s.term_b for s in syn_rows],
            "t2d_anchor": [p.term for p in t2d_rows], "t2d_positive": [p.definition for p in t2d_rows],
            "d2d_anchor": [a for a, _ in d2d_rows], "d2d_positive": [b for _, b in d2d_rows], **negatives}

    sh_rows = sh_stats = None
    train = {kind: t2d for kind in splits}
    if cfg.source_holdout_conditions:
        splits[SOURCE_HOLDOUT], sh_rows, sh_stats = _source_holdout(cfg, second, common, wn, n_rows, progress)
        train[SOURCE_HOLDOUT] = splits[SOURCE_HOLDOUT].train
    eval_sets = _eval_sets(cfg, splits, wn, progress, train)
    stats = {
        "second_source": second, "wiktionary_dump": str(wiktionary) if wiktionary else None,
        "train_pairs": {"t2d": len(t2d), "syn": len(syn), "d2d": len(d2d),
                        "t2d_by_source": {src: sum(p.source == src for p in t2d) for src in ("wordnet", second)}},
        "rows": n_rows, "hard_negatives": _negative_stats(neg_stats, cfg.swap_negatives),
        "eval": {k: {"pairs": len(e.records), "stress_negatives": len(e.negatives),
                     "rules": {r: s["applied"] for r, s in e.rule_stats.items()},
                     **({"nearest_rules": {r: s["applied"] for r, s in e.nearest[1].items()}} if e.nearest else {})}
                 for k, e in eval_sets.items()},
        "np_paraphrase": len(np_items) if np_items else None,
        "dbpedia_test_queries": len(dbpedia.queries) if dbpedia else None,
        SOURCE_HOLDOUT: sh_stats,
    }
    return ConceptData(rows, cfg.negatives_per_pair, eval_sets, np_items, dbpedia, stats, sh_rows)


CHECKSUMS = "checksums.json"


def _dump(data: ConceptData, folder: Path) -> None:
    """Write the data as JSON files plus checksums.json (sha256 of every file, verified by _load)."""
    from dataclasses import asdict

    from ..._store import sha256_file

    files = {"rows.json": json.dumps(data.rows), "stats.json": json.dumps({"k": data.k, **data.stats}, indent=2)}
    if data.source_holdout_rows is not None:
        files["source_holdout_rows.json"] = json.dumps(data.source_holdout_rows)
    files["eval.json"] = json.dumps({k: {"records": [asdict(r) for r in e.records],
                                         "negatives": [asdict(n) for n in e.negatives],
                                         "rule_stats": e.rule_stats,
                                         "nearest": None if e.nearest is None else
                                         {"negatives": [asdict(n) for n in e.nearest[0]], "rule_stats": e.nearest[1]}}
                                     for k, e in data.eval_sets.items()})
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / CHECKSUMS).write_text(json.dumps({name: sha256_file(folder / name) for name in files}, indent=2))


def _load(folder: Path, data_dir) -> ConceptData:
    """Read what _dump wrote; CacheDamagedError naming the file when a checksum or a decode fails."""
    from ..._store import CacheDamagedError, sha256_file
    from ...data.hard_negatives import HardNegative

    try:
        sums = json.loads((folder / CHECKSUMS).read_text())
    except (OSError, ValueError) as exc:
        raise CacheDamagedError(folder / CHECKSUMS, str(exc)) from exc

    def read(name: str):
        path = folder / name
        try:
            intact = sha256_file(path) == sums[name]
            value = json.loads(path.read_text()) if intact else None
        except (OSError, ValueError, KeyError) as exc:
            raise CacheDamagedError(path, str(exc)) from exc
        if not intact:
            raise CacheDamagedError(path, "checksum mismatch")
        return value

    rows, stats, evals = read("rows.json"), read("stats.json"), read("eval.json")
    sh_rows = read("source_holdout_rows.json") if "source_holdout_rows.json" in sums else None
    try:
        eval_sets = {k: EvalSet(k, [TermDefinition(**r) for r in e["records"]],
                                [HardNegative(**n) for n in e["negatives"]], e["rule_stats"],
                                None if e["nearest"] is None else
                                ([HardNegative(**n) for n in e["nearest"]["negatives"]], e["nearest"]["rule_stats"]))
                     for k, e in evals.items()}
        k = stats.pop("k")
    except (KeyError, TypeError, AttributeError) as exc:
        raise CacheDamagedError(folder, f"unexpected structure: {exc!r}") from exc
    np_items, dbpedia = load_extra_suites(data_dir)
    return ConceptData(rows, k, eval_sets, np_items, dbpedia, stats, sh_rows)


def load_or_build(cfg, root, progress: bool = True, world: int = 1) -> ConceptData:
    """The cached data of this config under <root>/data/<fingerprint>/, built (atomically) when absent; one
    process builds it while the others (torchrun ranks, parallel runs) wait for it."""
    from ..._atomic import atomic_dir
    from ..._store import CacheDamagedError, file_lock

    folder = Path(root) / "data" / data_fingerprint(cfg, world)
    with file_lock(folder.with_name(f".{folder.name}.lock")):
        if folder.is_dir():
            try:
                return _load(folder, cfg.data_dir)
            except CacheDamagedError as exc:  # damaged or from an older spherekit: built again
                warnings.warn(f"{exc}; rebuilding it", RuntimeWarning, stacklevel=2)
        data = build(cfg, progress=progress, world=world)
        with atomic_dir(folder) as tmp:
            _dump(data, tmp)
    return data
