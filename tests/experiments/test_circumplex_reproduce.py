"""`spherekit reproduce circumplex` end to end on the tiny preset (a small local backbone): the grid, the
label-count and unfrozen units, the card, resume, --data-dir tables, bad input, the paper's claims as
checks, and the cached-vs-per-step benchmark."""

import json
from pathlib import Path

import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.circumplex.config import (PRESETS, TRAINED_RUNS, CircumplexConfig, Run, parse_condition,
                                                     preset_config, select, units_of)
from spherekit.experiments.circumplex.paper import TABLE1, check_claims, paper_claims_hold
from spherekit.experiments.config import with_overrides

CONDITIONS = ("Pretrained,SINCERE-nGPT@frozen,CircularCSE-GPT@frozen,SoftCSE-nGPT@unfrozen,"
              "CircularCSE-nGPT@frozen+4labels")


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("circumplex")
    code = main(["reproduce", "circumplex", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 CONDITIONS, "--out", str(out), "--no-progress"])
    assert code == 0
    return out / "circumplex" / "tiny"


def test_conditions_parse_and_round_trip():
    for name in ("Pretrained", "SINCERE-GPT@frozen", "CircularCSE-nGPT@unfrozen+6labels"):
        assert parse_condition(name).name == name
    run = parse_condition("SoftCSE-nGPT@frozen+4labels")
    assert (run.head, run.loss, run.regime, run.labels) == ("ngpt", "softcse", "frozen", 4)
    for bad in ("SINCERE", "SINCERE-GPT@cold", "SINCERE-GPT@frozen+5labels", "Foo-GPT@frozen"):
        with pytest.raises(ValueError, match="valid"):
            parse_condition(bad)
    assert set(get("circumplex").conditions) >= {"Pretrained", *TRAINED_RUNS, "SINCERE-GPT@unfrozen"}


def test_presets_and_selection():
    for name in PRESETS:
        preset_config(name)
    cfg = preset_config("cpu-small")
    units = units_of(cfg)
    assert units[0] == "Pretrained" and len(units) == 7 and all(u.endswith("@frozen") for u in units[1:])
    cpu = units_of(preset_config("cpu"))
    assert "SINCERE-GPT@unfrozen" in cpu and "CircularCSE-GPT@frozen+2labels" in cpu
    assert cpu.index("CircularCSE-GPT@frozen+2labels") < cpu.index("SINCERE-GPT@unfrozen")  # cheap units first
    picked = with_overrides(cfg, select(["SINCERE-GPT", "CircularCSE-nGPT@unfrozen+4labels"]))
    assert units_of(picked) == ["SINCERE-GPT@frozen", "CircularCSE-nGPT@unfrozen+4labels"]
    assert cfg.train_config(1800).steps == 5 * 29  # epochs x ceil(n / batch)
    with pytest.raises(ValueError, match="runs"):
        CircumplexConfig(runs=("SINCERE-XL",))
    with pytest.raises(ValueError, match="data-dir"):
        CircumplexConfig(dataset="goemotions")


def test_claim_checks_on_the_papers_own_table():
    holds = paper_claims_hold()
    names = list(TABLE1)
    assert all(all(v) for c, v in holds.items() if not c.startswith("The highest CD-r"))
    best = next(v for c, v in holds.items() if c.startswith("The highest CD-r"))
    assert dict(zip(names, best)) == {names[0]: True, names[1]: True, names[2]: False}  # Llama: SoftCSE-nGPT ties
    flipped = {run: (cd, v) for run, (v, cd) in TABLE1[names[0]].items()}  # swap V and CD-r: orders break
    verdicts = {claim: h for claim, _, h in check_claims(flipped)}
    assert not any(h for c, h in verdicts.items() if c.startswith(("V-measure", "CD-r")))
    assert all(h is None for _, _, h in check_claims({"SINCERE-GPT": (0.5, 0.5)}))


def test_units_layout_and_metrics(card):
    results = json.loads((card / "results.json").read_text())
    assert set(results["units"]) == {f"st/{c}" for c in CONDITIONS.split(",")}
    for uid, unit in results["units"].items():
        m = unit["metrics"]
        assert 0 <= m["v_measure"] <= 1 and -1 <= m["cd_r"] <= 1, uid
        details = unit["details"]
        n_labels = len(unit["labels"])
        assert len(details["label_cosine"]) == n_labels and details["pca_sweep"][-1]["reduced"] is False
        assert len(details["pca_points"]) == details["n_test"] == len(details["pca_labels"])
        if "nGPT" in uid:  # the trained step sizes, read back from the saved head: near their init here
            assert 0 < m["alpha_mean"] <= m["alpha_max"] < 0.2, uid
        else:
            assert "alpha_mean" not in m and "alpha_max" not in m, uid
    four = results["units"]["st/CircularCSE-nGPT@frozen+4labels"]
    assert four["labels"] == ["love", "surprise", "disgust", "calmness"]
    frozen = results["units"]["st/SINCERE-nGPT@frozen"]
    assert frozen["seconds"]["train"] > 0 and "cache" in frozen["seconds"]
    assert frozen["training"]["steps"] == 2 * -(-6 * 12 // 16)
    assert "cache" not in results["units"]["st/SoftCSE-nGPT@unfrozen"]["seconds"]  # fine-tuning: no cache
    for cond in CONDITIONS.split(",")[1:]:
        d = card / "st" / cond
        assert (d / "done").is_file() and (d / "checkpoint" / "modules.json").is_file()
        assert not (d / "trainer").exists()


def test_saved_frozen_model_reloads_on_the_real_backbone(card):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(card / "st" / "SINCERE-nGPT@frozen" / "checkpoint"), trust_remote_code=True)
    emb = model.encode(["I am so happy today", "a dreadful fright"], convert_to_tensor=True)
    assert emb.shape[0] == 2 and abs(float(emb.norm(dim=1).mean()) - 1.0) < 1e-4


def test_card_report_and_rerender(card):
    report = (card / "report.md").read_text()
    assert "The paper's Table 1" in report and "Label-count study" in report and "departs" in report
    assert "frozen backbone" in report and "unfrozen backbone" in report and "nGPT alpha mean" in report
    plots = sorted(p.name for p in (card / "plots").glob("*.png"))
    assert "label_count.png" in plots and any(p.endswith("_pca_dims.png") for p in plots)
    assert any("CircularCSE" not in p and p.endswith("_cosine.png") for p in plots)
    (card / "report.md").unlink()
    assert main(["reproduce", "report", str(card)]) == 0 and (card / "report.md").is_file()


def test_rerun_reuses_finished_units(card, backbone_dir, capsys):
    code = main(["reproduce", "circumplex", "--preset", "tiny", "--backbone", str(backbone_dir), "--conditions",
                 "SINCERE-nGPT@frozen", "--out", str(card.parent.parent), "--no-progress"])
    assert code == 0
    assert "done earlier (reused" in capsys.readouterr().err


def _table(path: Path, rows, header="text,label"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "\n" + "\n".join(rows) + "\n")


def test_data_dir_table(backbone_dir, tmp_path):
    texts = {"joy": "what a wonderful sunny day {}", "sadness": "I miss my old friend so much {}",
             "anger": "this makes me furious {}"}
    for split, numbers in (("train", range(8)), ("test", range(100, 104))):  # disjoint texts
        _table(tmp_path / "data" / f"{split}.csv", [f"{t.format(i)},{lab}" for lab, t in texts.items()
                                                    for i in numbers])
    out = tmp_path / "out"
    code = main(["reproduce", "circumplex", "--preset", "tiny", "--backbone", str(backbone_dir), "--data-dir",
                 str(tmp_path / "data"), "--conditions", "SINCERE-nGPT@frozen", "--out", str(out), "--no-progress"])
    assert code == 0
    results = json.loads((out / "circumplex" / "tiny" / "results.json").read_text())
    assert results["data"]["labels"] == ["joy", "anger", "sadness"]  # by angle: 30, 120, 210
    assert results["data"]["n_test"] == 12


def _fails(capsys, args, *needles):
    assert main(["reproduce", "circumplex", "--preset", "tiny", "--no-progress", *args]) == 2
    err = capsys.readouterr().err
    assert all(n in err for n in needles), err


def test_bad_input(backbone_dir, tmp_path, capsys):
    _fails(capsys, ["--conditions", "SINCERE-GPT@cold", "--out", str(tmp_path)], "valid")
    _fails(capsys, ["--set", "epochs", "--out", str(tmp_path)], "FIELD=VALUE")
    _fails(capsys, ["--set", "dataset=goemotions", "--out", str(tmp_path)], "needs --data-dir")
    _table(tmp_path / "bad" / "train.csv", ["a happy text,joy"], header="sentence,label")
    _table(tmp_path / "bad" / "test.csv", ["a happy text,joy"], header="sentence,label")
    _fails(capsys, ["--backbone", str(backbone_dir), "--data-dir", str(tmp_path / "bad"), "--out",
                    str(tmp_path / "o")], "train.csv", "text")
    for split, n in (("train", 8), ("test", 4)):
        _table(tmp_path / "odd" / f"{split}.csv", [f"{lab} {split} {i},{lab}" for lab in ("joy", "nostalgia")
                                                   for i in range(n)])
    _fails(capsys, ["--backbone", str(backbone_dir), "--data-dir", str(tmp_path / "odd"), "--out",
                    str(tmp_path / "o")], "nostalgia", "--angles")
    angles = tmp_path / "angles.csv"
    angles.write_text("label,angle\nnostalgia,210\n")
    assert main(["reproduce", "circumplex", "--preset", "tiny", "--no-progress", "--backbone", str(backbone_dir),
                 "--data-dir", str(tmp_path / "odd"), "--angles", str(angles), "--conditions", "Pretrained",
                 "--out", str(tmp_path / "o")]) == 0


def test_bench_cached_equals_per_step(backbone_dir, tmp_path, capsys):
    from spherekit.bench.reproduce_circumplex import run

    import csv

    assert run("tiny", out=str(tmp_path), backbone=str(backbone_dir)) == 0
    rows = list(csv.DictReader((tmp_path / "reproduce_circumplex.csv").open()))
    assert [r["recipe"] for r in rows] == ["cached", "per-step"] and all(r["status"] == "ok" for r in rows)
    # CD-r is smooth in the embeddings: the cached grid matches the per-step one to float32 noise (a random
    # tiny backbone's k-means may flip a boundary point, so its V-measure is only reported)
    assert all(float(r["cdr_max_diff"]) < 1e-4 and r["v_max_diff"] != "" for r in rows)
    assert "cached vs per-step" in capsys.readouterr().out


def test_run_names():
    assert Run("Pretrained").name == "Pretrained" and Run("SINCERE-GPT", "frozen").head == "gpt"
