"""Published-format loaders on small fixture files in those formats; malformed files name file, line, field."""

import itertools
import shutil
from pathlib import Path

import pytest

from spherekit.data.datasets import DatasetFormatError
from spherekit.data.datasets.beir import load_beir, load_nanobeir
from spherekit.data.datasets.dbpedia_gap import load_dbpedia_gap
from spherekit.data.datasets.emolit import load_emolit
from spherekit.data.datasets.empathetic_dialogues import load_empathetic_dialogues
from spherekit.data.datasets.goemotions import load_goemotions, load_goemotions_raw
from spherekit.data.datasets.np_paraphrase import load_np_paraphrase
from spherekit.data.datasets.nq import load_nq_triplets
from spherekit.data.datasets.sick import load_sick
from spherekit.data.datasets.sts import as_evaluator_subsets, load_sts
from spherekit.data.datasets.stsb import load_stsb
from spherekit.data.datasets.superemotion import load_superemotion

FIX = Path(__file__).parent / "fixtures"
_CASES = itertools.count()


def _broken(tmp_path, rel, line_no, new_line, copy=None):
    """Copy a fixture (with its folder) into a fresh folder under tmp_path and replace one 1-based line."""
    src = FIX / rel
    base = tmp_path / f"case{next(_CASES)}"
    dst = base / rel
    folder = copy or str(Path(rel).parent)
    shutil.copytree(FIX / folder, base / folder, dirs_exist_ok=True)
    lines = src.read_text(encoding="utf-8").splitlines()
    lines[line_no - 1] = new_line
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def _expect(exc_info, path, line, field):
    err = exc_info.value
    assert isinstance(err, DatasetFormatError)
    assert Path(err.path).name == Path(path).name and err.line == line and err.field == field
    msg = str(err)
    assert Path(path).name in msg and (line is None or f":{line}:" in msg) and (field is None or field in msg)


# ---------------------------------------------------------------- STS / STS-B / SICK

def test_sts_subsets_and_missing_gold_dropped():
    data = load_sts(FIX / "sts" / "STS12-en-test", subsets=["MSRpar", "MSRvid"])
    assert [len(v) for v in data.values()] == [3, 3]  # MSRpar line 4 has no gold score
    assert data["MSRpar"][0].sentence1 == "A man is playing a guitar." and data["MSRpar"][2].score == 3.6
    assert data["MSRvid"][1].sentence2 == "The weather is sunny today." and data["MSRvid"][1].score == 0.0
    discovered = load_sts(FIX / "sts" / "STS12-en-test")
    assert sorted(discovered) == ["MSRpar", "MSRvid"]
    s1, s2, gold = as_evaluator_subsets(data)["MSRvid"]
    assert gold == [5.0, 0.0, 4.25] and len(s1) == len(s2) == 3


def test_sts_year_needs_all_senteval_subsets():
    with pytest.raises(FileNotFoundError, match="STS.input.SMTeuroparl.txt"):
        load_sts(FIX / "sts" / "STS12-en-test", year=12)


def test_sts_errors(tmp_path):
    bad = _broken(tmp_path, "sts/STS12-en-test/STS.gs.MSRvid.txt", 2, "zero")
    with pytest.raises(DatasetFormatError) as e:
        load_sts(bad.parent, subsets=["MSRvid"])
    _expect(e, bad, 2, "score")
    bad = _broken(tmp_path, "sts/STS12-en-test/STS.input.MSRvid.txt", 3, "no tab here")
    with pytest.raises(DatasetFormatError) as e:
        load_sts(bad.parent, subsets=["MSRvid"])
    _expect(e, bad, 3, "sentence2")


def test_stsb_and_sick():
    stsb = load_stsb(FIX / "stsb" / "sts-test.csv")
    assert [p.score for p in stsb] == [2.5, 0.6, 3.8]
    assert stsb[2].sentence2 == "I believe that is correct."  # extra source columns ignored
    sick = load_sick(FIX / "sick" / "SICK_test_annotated.txt")
    assert [p.score for p in sick] == [4.7, 3.2, 1.1] and sick[1].sentence2 == "Nobody is cooking"


def test_stsb_sick_errors(tmp_path):
    bad = _broken(tmp_path, "stsb/sts-test.csv", 2, "main-news\theadlines\t2013\t0001\tNaNx\ta\tb")
    with pytest.raises(DatasetFormatError) as e:
        load_stsb(bad)
    _expect(e, bad, 2, "score")
    bad = _broken(tmp_path, "stsb/sts-test.csv", 1, "main\tMSRvid\t2012\t0000\t2.5")
    with pytest.raises(DatasetFormatError) as e:
        load_stsb(bad)
    _expect(e, bad, 1, "sentence1")
    bad = _broken(tmp_path, "sick/SICK_test_annotated.txt", 1, "pair_ID\tsentence_A\tsentence_B\tscore")
    with pytest.raises(DatasetFormatError) as e:
        load_sick(bad)
    _expect(e, bad, 1, "relatedness_score")
    bad = _broken(tmp_path, "sick/SICK_test_annotated.txt", 3, "2\tA man is cooking\t\t3.2\tCONTRADICTION")
    with pytest.raises(DatasetFormatError) as e:
        load_sick(bad)
    _expect(e, bad, 3, "sentence_B")


# ---------------------------------------------------------------- BEIR / NanoBEIR

def test_beir_layout():
    data = load_beir(FIX / "beir" / "NanoAlpha")
    assert list(data.queries) == ["q1", "q2"]  # q3 has no judgement
    assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 2}}  # score 0 is not relevant
    assert data.corpus["d1"].startswith("Mammal A warm-blooded") and data.corpus["d2"].startswith("Inflation")
    queries, corpus, relevant = data.retrieval_inputs()
    assert queries[1] == "why do prices keep rising" and relevant == [{0: 1}, {1: 2}] and len(corpus) == 4
    both = load_nanobeir(FIX / "beir")
    assert sorted(both) == ["NanoAlpha", "NanoBeta"] and both["NanoBeta"].qrels == {"1": {"x": 1}}


def test_beir_errors(tmp_path):
    bad = _broken(tmp_path, "beir/NanoAlpha/corpus.jsonl", 2, '{"_id": "d2", "title": "", "txt": "oops"}')
    with pytest.raises(DatasetFormatError) as e:
        load_beir(bad.parent)
    _expect(e, bad, 2, "text")
    bad = _broken(tmp_path, "beir/NanoAlpha/queries.jsonl", 1, '{"_id": "q1", "text": "unclosed')
    with pytest.raises(DatasetFormatError) as e:
        load_beir(bad.parent)
    _expect(e, bad, 1, None)
    bad = _broken(tmp_path, "beir/NanoAlpha/qrels/test.tsv", 3, "q2\td2\tmany", copy="beir/NanoAlpha")
    with pytest.raises(DatasetFormatError) as e:
        load_beir(bad.parent.parent)
    _expect(e, bad, 3, "score")
    bad = _broken(tmp_path, "beir/NanoAlpha/qrels/test.tsv", 2, "q1\td9\t1", copy="beir/NanoAlpha")
    with pytest.raises(DatasetFormatError, match="d9"):
        load_beir(bad.parent.parent)


# ---------------------------------------------------------------- NQ, NP paraphrase, DBpedia

def test_nq_triplets_both_layouts():
    js = load_nq_triplets(FIX / "nq" / "triplets.jsonl")
    assert [t.anchor for t in js] == ["who wrote the origin of species", "when was the eiffel tower built", "capital of japan"]
    assert js[2].negative == "Kyoto was once the capital."
    tsv = load_nq_triplets(FIX / "nq" / "triplets.tsv")
    assert tsv[1].positive == "Mount Everest is 8849 metres tall." and len(tsv) == 2
    assert len(load_nq_triplets(FIX / "nq" / "triplets.jsonl", limit=1)) == 1


def test_nq_errors(tmp_path):
    bad = _broken(tmp_path, "nq/triplets.jsonl", 2, '{"anchor": "q", "positive": "p"}')
    with pytest.raises(DatasetFormatError) as e:
        load_nq_triplets(bad)
    _expect(e, bad, 2, "negative")
    assert load_nq_triplets(bad, allow_pairs=True)[1].negative is None
    bad = _broken(tmp_path, "nq/triplets.jsonl", 1, '["only", "two"]')
    with pytest.raises(DatasetFormatError) as e:
        load_nq_triplets(bad)
    _expect(e, bad, 1, None)


def test_np_paraphrase():
    items = load_np_paraphrase(FIX / "np_paraphrase" / "np_paraphrase.jsonl")
    assert [i.family for i in items] == ["intersective", "subsective", "relational", "modal", "privative"]
    assert items[3].regime is None and items[0].id == "np-1" and items[2].paraphrase.startswith("container")
    tsv = load_np_paraphrase(FIX / "np_paraphrase" / "np_paraphrase.tsv")
    assert tsv[1].query == "fake gun" and tsv[1].regime == "near" and tsv[1].id == "3"


def test_np_paraphrase_errors(tmp_path):
    bad = _broken(tmp_path, "np_paraphrase/np_paraphrase.jsonl", 4,
                  '{"query": "alleged culprit", "paraphrase": "x", "family": "adverbial"}')
    with pytest.raises(DatasetFormatError) as e:
        load_np_paraphrase(bad)
    _expect(e, bad, 4, "family")
    bad = _broken(tmp_path, "np_paraphrase/np_paraphrase.tsv", 2, "clean plate\t\tintersective\tstrict")
    with pytest.raises(DatasetFormatError) as e:
        load_np_paraphrase(bad)
    _expect(e, bad, 2, "paraphrase")


def test_dbpedia_gap():
    data = load_dbpedia_gap(FIX / "dbpedia_gap" / "pairs.jsonl", candidates_path=FIX / "dbpedia_gap" / "candidates.txt")
    assert data.queries == ["where someone drew last breath", "how many people live there"]
    assert data.properties[1] == ["populationTotal", "populationCensus"] and len(data.candidates) == 5
    queries, cands, relevant = data.retrieval_inputs()
    assert relevant == [{0}, {1, 2}]
    train = load_dbpedia_gap(FIX / "dbpedia_gap" / "pairs.jsonl", split="train")
    assert train.properties == [["completionDate"]] and "deathPlace" in train.candidates


def test_dbpedia_gap_errors(tmp_path):
    bad = _broken(tmp_path, "dbpedia_gap/pairs.jsonl", 3, '{"query": "q", "property": "p", "split": "dev"}')
    with pytest.raises(DatasetFormatError) as e:
        load_dbpedia_gap(bad)
    _expect(e, bad, 3, "split")
    bad = _broken(tmp_path, "dbpedia_gap/candidates.txt", 1, "somethingElse")
    with pytest.raises(DatasetFormatError, match="deathPlace"):
        load_dbpedia_gap(FIX / "dbpedia_gap" / "pairs.jsonl", candidates_path=bad)


# ---------------------------------------------------------------- emotion datasets

def test_emolit():
    ex = load_emolit(FIX / "emolit" / "emolit.tsv")
    assert [e.label for e in ex] == ["joy", "sadness", "fear", "love"]  # argmax of the scores
    assert ex[0].labels == ("joy",) and ex[3].labels == () and ex[1].text == "He wept, alone, by the grave."
    assert ex[1].id == "102" and ex[2].scores["fear"] == 0.88
    assert [e.id for e in load_emolit(FIX / "emolit" / "emolit.tsv", split="test")] == ["101", "102", "104"]


def test_emolit_errors(tmp_path):
    bad = _broken(tmp_path, "emolit/emolit.tsv", 3, "102\tsad text\ttest\t0.01\thigh\t0.2\t0.05")
    with pytest.raises(DatasetFormatError) as e:
        load_emolit(bad)
    _expect(e, bad, 3, "sadness")
    bad = _broken(tmp_path, "emolit/emolit.tsv", 2, "101\tjust text")
    with pytest.raises(DatasetFormatError) as e:
        load_emolit(bad)
    _expect(e, bad, 2, None)


def test_goemotions_layouts():
    ex = load_goemotions(FIX / "goemotions" / "train.tsv", FIX / "goemotions" / "emotions.txt")
    assert ex[0].labels == ("joy", "excitement") and ex[0].label is None and ex[1].label == "remorse"
    assert ex[2].labels == ("neutral",) and ex[2].id == "ed00q6i"
    assert [e.labels for e in load_goemotions(FIX / "goemotions" / "train.tsv")] == [e.labels for e in ex]
    raw = load_goemotions_raw(FIX / "goemotions" / "goemotions_1.csv")
    assert raw[0].labels == ("sadness",) and raw[1].labels == ("excitement", "gratitude")
    assert raw[1].text == 'Wow, "amazing", thanks!' and raw[1].meta["rater_id"] == "37"


def test_goemotions_errors(tmp_path):
    bad = _broken(tmp_path, "goemotions/train.tsv", 2, "I am so sorry.\t24,99\teemcysk")
    with pytest.raises(DatasetFormatError) as e:
        load_goemotions(bad)
    _expect(e, bad, 2, "labels")


def test_empathetic_dialogues():
    ex = load_empathetic_dialogues(FIX / "empathetic_dialogues" / "test.csv")
    assert [e.label for e in ex] == ["sentimental", "sentimental", "afraid"]
    assert ex[1].text == "Was this a friend you were in love with, or just a best friend?"
    assert ex[0].meta["prompt"].startswith("I remember going to the fireworks with my best friend, a long")
    first = load_empathetic_dialogues(FIX / "empathetic_dialogues" / "test.csv", first_utterance_only=True)
    assert [e.id for e in first] == ["hit:0_conv:1:1", "hit:1_conv:3:1"]


def test_empathetic_dialogues_errors(tmp_path):
    bad = _broken(tmp_path, "empathetic_dialogues/test.csv", 3, "hit:0_conv:1,two,sentimental,p,0,hello,,")
    with pytest.raises(DatasetFormatError) as e:
        load_empathetic_dialogues(bad)
    _expect(e, bad, 3, "utterance_idx")
    bad = _broken(tmp_path, "empathetic_dialogues/test.csv", 2, "hit:0_conv:1,1,sentimental")
    with pytest.raises(DatasetFormatError) as e:
        load_empathetic_dialogues(bad)
    _expect(e, bad, 2, "prompt")


def test_superemotion_parquet_and_jsonl(tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(l) for l in (FIX / "superemotion" / "superemotion.jsonl").read_text().splitlines()]
    path = tmp_path / "test-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    for source in (path, FIX / "superemotion" / "superemotion.jsonl"):
        ex = load_superemotion(source)
        assert [e.label for e in ex] == ["joy", "disgust", "neutral"] and ex[1].source == "GoEmotions"
        assert [e.source for e in load_superemotion(source, sources=("GoEmotions", "CrowdFlower"))] == ["CrowdFlower", "GoEmotions"]
    bad_rows = [dict(rows[0]), {k: v for k, v in rows[1].items() if k != "labels_str"}]
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(bad_rows), bad)
    with pytest.raises(DatasetFormatError) as e:
        load_superemotion(bad)
    _expect(e, bad, 2, "labels_str")


def test_duplicate_dbpedia_pairs_counted_once(tmp_path):
    src = (FIX / "dbpedia_gap" / "pairs.jsonl").read_text()
    path = tmp_path / "pairs.jsonl"
    path.write_text(src + '{"query": "where someone drew last breath", "property": "deathPlace", "split": "test"}\n')
    assert load_dbpedia_gap(path).properties[0] == ["deathPlace"]


def test_error_line_numbers_count_physical_lines_of_multiline_quoted_fields(tmp_path):
    good = tmp_path / "emolit.tsv"
    good.write_text('tid\ttext\tjoy\tfear\n1\t"a text\nspanning two lines"\t0.9\t0.1\n2\tfine\t0.2\t0.8\n')
    assert [e.text for e in load_emolit(good)] == ["a text\nspanning two lines", "fine"]
    bad = tmp_path / "bad.tsv"
    bad.write_text('tid\ttext\tjoy\tfear\n1\t"a text\nspanning two lines"\t0.9\t0.1\n3\tbad\tx\t0.1\n')
    with pytest.raises(DatasetFormatError) as e:
        load_emolit(bad)
    _expect(e, bad, 4, "joy")
