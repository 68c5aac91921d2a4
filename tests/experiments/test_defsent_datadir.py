"""--data-dir: the paper's TSV dictionaries replace the offline ones, and SentEval's STS layout is found and scored
(Spearman x 100 of cosine per year on the concatenated subsets)."""

from types import SimpleNamespace

import pytest
import torch.nn.functional as F
from scipy.stats import spearmanr

from spherekit.experiments.defsent.bank import encode_pooled
from spherekit.experiments.defsent.evaluate import evaluate_pooling, find_sts
from spherekit.experiments.defsent.run import DefSentData, load_records
from spherekit.experiments.defsent.spec import EXPERIMENT
from spherekit.experiments.api.config import with_overrides

PAIRS = [("a small cup", "a small plate", 3.0), ("the dog is warm", "a cold car", 0.5), ("joy", "happy feel", 4.0),
         ("a dirty cup", "a filthy cup", 4.8), ("price rise", "sunny weather", 0.2)]


def _senteval(root):
    sts13 = root / "downstream" / "STS" / "STS13-en-test"
    sts13.mkdir(parents=True)
    for name in ("FNWN", "headlines", "OnWN"):
        (sts13 / f"STS.input.{name}.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in PAIRS))
        (sts13 / f"STS.gs.{name}.txt").write_text("".join(f"{g}\n" for _, _, g in PAIRS))
    stsb = root / "downstream" / "STS" / "STSBenchmark"
    stsb.mkdir(parents=True)
    (stsb / "sts-test.csv").write_text("".join(f"main\tfile\t2012\t{i}\t{g}\t{a}\t{b}\n"
                                               for i, (a, b, g) in enumerate(PAIRS)))
    sick = root / "downstream" / "SICK"
    sick.mkdir(parents=True)
    (sick / "SICK_test_annotated.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        + "".join(f"{i}\t{a}\t{b}\t{g}\tNEUTRAL\n" for i, (a, b, g) in enumerate(PAIRS)))


def test_find_and_score_senteval_sts(tmp_path, tiny_model):
    assert find_sts(tmp_path) is None and find_sts(None) is None
    _senteval(tmp_path)
    sts = find_sts(tmp_path)
    assert set(sts) == {"STS13", "STS-B", "SICK-R"} and len(sts["STS13"][0]) == 3 * len(PAIRS)
    held = SimpleNamespace(sim={}, crossdict={"queries": ["a cup"], "corpus": ["a cup", "a dish"], "relevant": [[0]]},
                           probes={})
    cfg = EXPERIMENT.make_config("tiny")
    out = evaluate_pooling(tiny_model, held, "mean", cfg, sts)
    s1, s2, gold = sts["STS-B"]
    cos = F.cosine_similarity(encode_pooled(tiny_model, s1, "mean"), encode_pooled(tiny_model, s2, "mean"))
    assert out["sts/STS-B/Spearman"] == pytest.approx(100 * spearmanr(cos.numpy(), gold).statistic, abs=1e-4)
    assert out["sts/avg/Spearman"] == pytest.approx((out["sts/STS13/Spearman"] + out["sts/STS-B/Spearman"]
                                                     + out["sts/SICK-R/Spearman"]) / 3)


def test_tsv_dictionary_replaces_the_offline_one(tmp_path, tiny_model):
    (tmp_path / "c.tsv").write_text("cup\ta small open container<|list_more_def|>a drinking vessel\n"
                                    "plate\ta flat dish\njoy\ta happy feel<|list_more_def|>great delight\n")
    cfg = with_overrides(EXPERIMENT.make_config("tiny"), {"data_dir": str(tmp_path), "n_reverse": 1})
    records = load_records(cfg, ["c"])
    assert set(records) == {"c"}
    held = SimpleNamespace(terms=frozenset({"joy"}), definition_keys=frozenset({"a flat dish"}))
    d = DefSentData(held, records, None).dictionary("c", tiny_model.tokenizer, cfg)
    assert d.entries == ["cup"] and d.n_definitions == 1 and len(d.held_out) == 1
    (tmp_path / "c.tsv").write_text("cup\ta container\ncup\ta mug\n")
    with pytest.raises(ValueError, match=r"c.tsv:2: entry 'cup': duplicate entry"):
        load_records(cfg, ["c"])


def test_the_released_dictionary_layout_loads_as_downloaded(tmp_path):
    """The authors' release (README of github.com/ryuliuxiaodong/DefSent-Plus): ./datasets/Ox+WN.csv, UTF-16 with a
    byte-order mark, one entry per line, entry<TAB>def1<|list_more_def|>def2 (GenerateEncoderInput.py reads the
    second tab-separated column); a, b and c as <name>.csv beside it."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    lines = ["revitalize\tgive new life or vigor to<|list_more_def|>imbue something with new life and vitality",
             "cup\ta small open container\textra column", "plate\ta flat dish"]
    (folder / "Ox+WN.csv").write_text("\r\n".join(lines) + "\r\n", encoding="utf-16")
    assert (folder / "Ox+WN.csv").read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    (folder / "c.csv").write_text("cup\ta drinking vessel\n", encoding="utf-8")
    cfg = with_overrides(EXPERIMENT.make_config("tiny"), {"data_dir": str(tmp_path)})
    records = load_records(cfg, ["a", "c"])
    assert records["a"] == [("revitalize", "give new life or vigor to"),
                            ("revitalize", "imbue something with new life and vitality"),
                            ("cup", "a small open container"), ("plate", "a flat dish")]
    assert records["c"] == [("cup", "a drinking vessel")]
    (folder / "Ox+WN.csv").write_text("cup\ta container\ncup\ta mug\n", encoding="utf-16")
    with pytest.raises(ValueError, match=r"Ox\+WN.csv:2: entry 'cup': duplicate entry"):
        load_records(cfg, ["a"])


def test_senteval_root_as_the_released_teststs_reads_it(tmp_path):
    """TestSTS.py reads <senteval_root>/data/downstream/STS/... (SentEval-main's own layout): --data-dir may be that
    root."""
    _senteval(tmp_path / "data")
    sts = find_sts(tmp_path)
    assert set(sts) == {"STS13", "STS-B", "SICK-R"}
    assert sts["SICK-R"][0][0] == "a small cup" and sts["STS-B"][2] == [g for _, _, g in PAIRS]
