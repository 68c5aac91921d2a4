"""The concept reproduction's data: rows per view, decontamination against every evaluated split (the
source-holdout regime included), hard-negative columns, the cross-source pairs, caching and fingerprints."""

import dataclasses

import pytest

from spherekit.data.records import TermDefinition, definition_key, term_key
from spherekit.experiments.concept.data import (COUNT, MASKED, PADDING, build, cross_source_pairs, data_fingerprint,
                                                load_or_build, negative_keys)
from spherekit.experiments.concept.spec import EXPERIMENT

preset_config = EXPERIMENT.make_config

CFG = dataclasses.replace(preset_config("tiny"), eval_splits=("in-domain", "head-holdout"), steps=4,
                          source_holdout_conditions=("B1",))


@pytest.fixture(scope="module")
def data():
    return build(CFG, progress=False)


def test_rows_per_view_and_negatives(data):
    """Appendix G: a row holds its definition's generated negatives, none repeated, the empty slots padded and
    counted in the "label" column; each swap construction has its own columns, whichever conditions run."""
    n = CFG.steps * CFG.batch_size
    assert data.columns("random") == ["syn_anchor", "syn_positive", "t2d_anchor", "t2d_positive", "t2d_negative_1",
                                      "t2d_negative_2", COUNT, "d2d_anchor", "d2d_positive"]
    assert all(len(v) == n for v in data.rows.values())
    for swaps in ("random", "nearest"):
        *negatives, count = negative_keys(2, swaps)
        counts = data.rows[count]
        assert all(0 <= c <= 2 for c in counts) and any(c == 2 for c in counts)
        for i, pos in enumerate(data.rows["t2d_positive"]):
            real = [data.rows[key][i] for key in negatives[:counts[i]]]
            assert all(text != PADDING and definition_key(text) != definition_key(pos) for text in real)
            assert len(set(real)) == len(real)  # never a repeated negative
            assert all(data.rows[key][i] == PADDING for key in negatives[counts[i]:])
        dataset = data.dataset(swaps)
        assert dataset.column_names == data.columns(swaps)
        assert dataset[COUNT] == counts and dataset["t2d_negative_1"] == data.rows[negatives[0]]
    assert data.rows[negative_keys(2, "random")[0]] != data.rows[negative_keys(2, "nearest")[0]]
    assert data.dataset(None).column_names == data.columns(None)
    assert data.dataset("random", source_holdout=True).column_names == ["t2d_anchor", "t2d_positive",
                                                                       "t2d_negative_1", "t2d_negative_2", COUNT]
    slots = data.stats["hard_negatives"]["row_slots"]
    assert sum(slots.values()) == 2 * n
    assert slots.get(MASKED, 0) == sum(2 - c for c in data.rows[negative_keys(2, "random")[-1]])
    assert "nearest" in data.stats["hard_negatives"]["other_swaps"]


def test_rules_are_built_as_configured_and_counted(data):
    """The default config: appendix G's random swaps and noun-phrase negation, in training and in the stress tests,
    plus the harder stress split of nearest swaps (their random fallbacks counted); each rule's test negatives are
    counted per split."""
    gen = data.stats["hard_negatives"]["generation"]
    assert not any("random_fallback" in gen[r] for r in ("pos_swap", "prefix_swap", "type_swap"))
    nearest = data.stats["hard_negatives"]["other_swaps"]["nearest"]["generation"]
    assert all("random_fallback" in nearest[r] for r in ("pos_swap", "prefix_swap", "type_swap"))
    for kind, ev in data.stats["eval"].items():
        assert sum(ev["rules"].values()) == ev["stress_negatives"] == len(data.eval_sets[kind].negatives), kind
        harder, stats = data.eval_sets[kind].nearest
        assert {n.rule for n in harder} <= {"pos_swap", "prefix_swap", "type_swap"} and harder
        assert ev["nearest_rules"] == {r: s["applied"] for r, s in stats.items()}
    negated = [n for n in data.eval_sets["in-domain"].negatives if n.rule == "negation"]
    assert any(n.negative.lower().startswith("not ") for n in negated)  # bare noun phrases negated


def test_training_rows_never_show_a_test_term_or_definition(data):
    for kind in ("in-domain", "head-holdout"):
        test = data.eval_sets[kind].records
        terms, defs = {term_key(p.term) for p in test}, {definition_key(p.definition) for p in test}
        for col in ("syn_anchor", "syn_positive", "t2d_anchor"):
            assert not terms & {term_key(t) for t in data.rows[col]}, (kind, col)
        for col in ("t2d_positive", "d2d_anchor", "d2d_positive"):
            assert not defs & {definition_key(t) for t in data.rows[col]}, (kind, col)
    sh_test = data.eval_sets["source-holdout"].records
    assert all(p.source == "wordnet" for p in sh_test)
    sh_terms = {term_key(p.term) for p in sh_test}
    assert not sh_terms & {term_key(t) for t in data.source_holdout_rows["t2d_anchor"]}


def test_cross_source_pairs_order_and_cap():
    pairs = [TermDefinition("run", f"wn {i}", f"run.v.0{i}", "v") for i in range(3)]
    pairs += [TermDefinition("run", f"gc {j}", None, "v", "gcide") for j in range(3)]
    pairs += [TermDefinition("walk", "same text", "walk.v.01", "v"),
              TermDefinition("walk", "Same text.", None, "v", "gcide")]
    out = cross_source_pairs(pairs, "gcide", max_per_term=4)
    assert out == [("wn 0", "gc 0"), ("wn 0", "gc 1"), ("wn 1", "gc 0"), ("wn 1", "gc 1")]  # max(i, j) order


def test_cache_and_fingerprint(tmp_path, monkeypatch):
    cfg = dataclasses.replace(CFG, source_holdout_conditions=(), eval_splits=("in-domain",))
    first = load_or_build(cfg, tmp_path, progress=False)
    monkeypatch.setattr("spherekit.experiments.concept.data.build", lambda *a, **k: pytest.fail("rebuilt"))
    again = load_or_build(cfg, tmp_path, progress=False)
    assert again.rows == first.rows and again.k == first.k
    terms = [[r.term for r in data.eval_sets["in-domain"].records] for data in (again, first)]
    assert terms[0] == terms[1]
    assert len(again.eval_sets["in-domain"].negatives) == len(first.eval_sets["in-domain"].negatives)
    assert again.eval_sets["in-domain"].nearest == first.eval_sets["in-domain"].nearest
    fp = data_fingerprint(cfg)
    assert data_fingerprint(dataclasses.replace(cfg, lr=1.0, conditions=("B0",))) == fp  # not data settings
    for change in ({"data_seed": 1}, {"steps": 5}, {"negatives_per_pair": 3}, {"source_holdout_conditions": ("B0",)},
                   {"swap_negatives": "nearest"}, {"negation_scope": "finite verb"}):
        assert data_fingerprint(dataclasses.replace(cfg, **change)) != fp, change
    assert data_fingerprint(cfg, world=2) != fp


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "delete", "wrong structure", "no checksums"])
def test_damaged_data_cache_is_rebuilt_with_a_warning_naming_it(tmp_path, damage):
    """Every file of the cached data folder is checksummed: a changed byte, a cut-off file, a missing file, a
    valid JSON of the wrong shape, or a folder from before the checksums is built again, with a warning."""
    import json

    cfg = dataclasses.replace(CFG, source_holdout_conditions=(), eval_splits=("in-domain",))
    first = load_or_build(cfg, tmp_path, progress=False)
    folder = tmp_path / "data" / data_fingerprint(cfg)
    rows = folder / "rows.json"
    if damage == "flip a byte":
        raw = bytearray(rows.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        rows.write_bytes(bytes(raw))
    elif damage == "truncate":
        rows.write_bytes(rows.read_bytes()[:100])
    elif damage == "delete":
        (folder / "eval.json").unlink()
    elif damage == "wrong structure":  # checksums rewritten to match: only the structure is wrong
        (folder / "eval.json").write_text(json.dumps({"in-domain": {"records": [{"nope": 1}]}}))
        sums = json.loads((folder / "checksums.json").read_text())
        from spherekit._store import sha256_file

        sums["eval.json"] = sha256_file(folder / "eval.json")
        (folder / "checksums.json").write_text(json.dumps(sums))
    else:
        (folder / "checksums.json").unlink()
    with pytest.warns(RuntimeWarning, match="damaged cache.*rebuilding") as caught:
        again = load_or_build(cfg, tmp_path, progress=False)
    assert str(folder) in str(caught[0].message)
    assert again.rows == first.rows
    assert load_or_build(cfg, tmp_path, progress=False).rows == first.rows  # intact again: read, not rebuilt


KAIKKI_LINE = ('{"word": "dog", "pos": "noun", "lang": "English", "lang_code": "en", "senses": [{"glosses": ["A '
               'domesticated canine mammal."], "synonyms": [{"word": "hound"}]}]}')
NP_JSONL = ('{"id": "np-1", "query": "dirty cup", "paraphrase": "not clean cup", "family": "intersective", '
            '"regime": "strict"}\n'
            '{"id": "np-2", "query": "fake gun", "paraphrase": "weapon lookalike", "family": "privative", '
            '"regime": "near"}\n')
NP_TSV = "query\tparaphrase\tfamily\tregime\ndirty cup\tnot clean cup\tintersective\tstrict\n" \
         "fake gun\tweapon lookalike\tprivative\tnear\n"
DBPEDIA = ('{"query": "where someone drew last breath", "property": "deathPlace", "split": "test"}\n'
           '{"query": "how many people live there", "property": "populationTotal", "split": "test"}\n'
           '{"query": "the year the building was finished", "property": "completionDate", "split": "train"}\n')


@pytest.mark.parametrize("layout", ["wiktionary/en.jsonl", "wiktionary/en.jsonl.gz",
                                    "kaikki.org-dictionary-English.jsonl", "kaikki-en.jsonl.gz"])
def test_data_dir_finds_a_wiktextract_dump_in_each_layout(tmp_path, layout):
    """--data-dir: a Wiktextract (kaikki.org) JSONL dump, plain or gzipped, under wiktionary/ or as kaikki*.jsonl."""
    import gzip

    from spherekit.data.wiktionary import load_wiktionary
    from spherekit.experiments.concept.data import find_wiktionary

    path = tmp_path / layout
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (KAIKKI_LINE + "\n").encode()
    path.write_bytes(gzip.compress(raw) if layout.endswith(".gz") else raw)
    assert find_wiktionary(tmp_path) == path
    assert [s.term for s in load_wiktionary(find_wiktionary(tmp_path))] == ["dog"]
    assert find_wiktionary(tmp_path / "absent") is None and find_wiktionary(None) is None


@pytest.mark.parametrize("layout, text", [("np_paraphrase.jsonl", NP_JSONL), ("np_paraphrase.tsv", NP_TSV),
                                          ("np_paraphrase/np_paraphrase_v1.jsonl", NP_JSONL),
                                          ("np_paraphrase/np_paraphrase_v1.tsv", NP_TSV)])
def test_data_dir_reads_the_np_paraphrase_suite_in_each_layout(tmp_path, layout, text):
    from spherekit.experiments.concept.data import load_extra_suites

    (tmp_path / layout).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / layout).write_text(text)
    items, dbpedia = load_extra_suites(tmp_path)
    assert [(i.query, i.family) for i in items] == [("dirty cup", "intersective"), ("fake gun", "privative")]
    assert dbpedia is None


@pytest.mark.parametrize("candidates", [True, False])
def test_data_dir_reads_the_dbpedia_benchmark(tmp_path, candidates):
    from spherekit.experiments.concept.data import load_extra_suites

    (tmp_path / "dbpedia_gap").mkdir()
    (tmp_path / "dbpedia_gap" / "pairs.jsonl").write_text(DBPEDIA)
    if candidates:
        (tmp_path / "dbpedia_gap" / "candidates.txt").write_text("deathPlace\npopulationTotal\nbirthPlace\n")
    items, dbpedia = load_extra_suites(tmp_path)
    assert items is None and len(dbpedia.queries) == 2  # the test split only
    assert ("birthPlace" in dbpedia.candidates) == candidates
