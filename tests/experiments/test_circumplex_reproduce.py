"""`spherekit reproduce circumplex` end to end on the tiny preset (a small local backbone): the grid, the
label-count and unfrozen units, the card, resume, --data-dir tables, bad input, the paper's claims as
checks (on the paper's own Table 1 and on numbers that break them), the claims' groups, and the cached-vs-per-step
benchmark."""

import json
from pathlib import Path

import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.circumplex import paper as P
from spherekit.experiments.circumplex.spec import (CD_R, EXPERIMENT, PRESETS, TRAINED_RUNS, V, CircumplexConfig,
                                                   GroupScope, Run, parse_condition)
from spherekit.experiments.api.claims import evaluate
from spherekit.experiments.api.config import with_overrides
from spherekit.experiments.api.metrics import invalid_keys

preset_config, units_of, select = EXPERIMENT.make_config, EXPERIMENT.selected, EXPERIMENT.select

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
    experiment = get("circumplex")
    assert {"Pretrained", "SINCERE-GPT@unfrozen", "SoftCSE-nGPT@frozen+6labels"} <= set(experiment.conditions)
    assert not set(TRAINED_RUNS) & set(experiment.conditions)  # bare run names are aliases, not units
    assert set(TRAINED_RUNS) <= set(experiment.selectable())
    assert len(experiment.conditions) == 1 + len(TRAINED_RUNS) * 2 * 5
    for name, condition in experiment.conditions.items():
        assert parse_condition(name) == condition.params
        trained = name != "Pretrained"  # Pretrained: a frozen backbone evaluated with data_seed, run once
        assert condition.seeded is trained and condition.distributed is trained, name
    assert "a bare run name" in experiment.condition_help


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
    assert cfg.train_config(1800, 7).steps == 5 * 29 and cfg.train_config(1800, 7).seed == 7  # epochs x ceil(n / b)
    assert (cfg.seeds, cfg.data_seed) == ((42, 43, 44), 42)
    assert (cfg.pooling, cfg.head_mask, cfg.pretrained_pooling) == ("auto", "auto", "head")
    ngpt = ["Pretrained", "SINCERE-nGPT@frozen", "SoftCSE-nGPT@frozen", "CircularCSE-nGPT@frozen"]
    mean, alpha = preset_config("cpu-small-mean-pooling"), preset_config("cpu-small-alpha0.25")
    longer = preset_config("cpu-small-15epochs")
    assert units_of(mean) == units_of(alpha) == units_of(longer) == ngpt and mean.seeds == cfg.seeds
    assert (mean.pooling, mean.alpha_init, alpha.pooling, alpha.alpha_init) == ("mean", 0.05, "auto", 0.25)
    assert longer.train_config(1800, 7).steps == 15 * 29 and longer.alpha_init == cfg.alpha_init
    paper, tuned = preset_config("paper"), preset_config("paper-finetuned")
    assert paper.backbones == ("Qwen/Qwen3-Embedding-4B", "nvidia/llama-embed-nemotron-8b", "meta-llama/Llama-3.2-3B",
                               "allenai/Olmo-3-1025-7B") and paper.regimes == ("frozen",)
    assert tuned.backbones == ("intfloat/multilingual-e5-large", "mixedbread-ai/mxbai-embed-large-v1")
    assert all("@unfrozen" in u for u in units_of(tuned) if u != "Pretrained")  # label-count runs included
    assert (paper.pooling, paper.epochs, paper.batch_size, paper.n_train_per_label) == ("auto", 15, 128, 500)
    with pytest.raises(ValueError, match="runs"):
        CircumplexConfig(runs=("SINCERE-XL",))
    with pytest.raises(ValueError, match="data-dir"):
        CircumplexConfig(dataset="goemotions")
    for field, bad in (("pooling", "max"), ("head_mask", "sideways"), ("pretrained_pooling", "cls")):
        with pytest.raises(ValueError, match=field):
            CircumplexConfig(**{field: bad})


def _verdicts(scope):
    return {r["id"]: r for r in evaluate(P.CLAIMS, [scope])}


def test_claim_checks_on_the_papers_own_table():
    holds = P.paper_claims_hold()
    names = [backbone for backbone, _ in P.TABLE1]
    assert list(holds) == ["C1-GPT", "C1-nGPT", "C2-GPT", "C2-nGPT", "C3", "C4", "C5-GPT", "C5-nGPT"]
    assert all(all(v) for c, v in holds.items() if c != "C3")
    assert dict(zip(names, holds["C3"])) == {names[0]: True, names[1]: True, names[2]: False}  # Llama: a tie
    e5 = P.paper_scopes()[0]
    assert e5.name == "multilingual-e5-large, unfrozen" and e5.metric("SINCERE-GPT@unfrozen", V) == 0.760
    flipped = GroupScope("e5", "unfrozen", {c: {"metrics": {V: u["metrics"][CD_R], CD_R: u["metrics"][V]}}
                                            for c, u in e5.units.items()})  # swap V and CD-r: the orders break
    got = _verdicts(flipped)
    for head in ("GPT", "nGPT"):
        assert got[f"C1-{head}"]["point"] == got[f"C2-{head}"]["point"] == "does not hold"
        assert got[f"C1-{head}"]["value"] < 0 and got[f"C1-{head}"]["op"] == ">"
        assert got[f"C1-{head}"]["margin"] == 0.0
    alone = _verdicts(GroupScope("b", "frozen", {"SINCERE-GPT@frozen": {"metrics": {V: 0.5, CD_R: 0.5}}}))
    assert all(r["verdict"] == "not run" and r["measured"].startswith("needs") for r in alone.values())


def test_claim_rules_at_their_edges():
    def scope(v, cd, pretrained=0.1):
        units = {Run(r, "frozen").name: {"metrics": {V: v[i], CD_R: cd[i]}} for i, r in enumerate(TRAINED_RUNS)}
        return GroupScope("b", "frozen", {**units, "Pretrained": {"metrics": {V: pretrained, CD_R: 0.5}}})

    # runs: SINCERE-GPT, SINCERE-nGPT, SoftCSE-GPT, SoftCSE-nGPT, CircularCSE-GPT, CircularCSE-nGPT
    tie = _verdicts(scope([0.7, 0.7, 0.7, 0.7, 0.6, 0.6], [0.3, 0.3, 0.5, 0.8, 0.8, 0.7]))
    assert tie["C3"]["point"] == "does not hold"  # SoftCSE-nGPT ties the best CircularCSE: the paper's Llama case
    others = [r for cid, r in tie.items() if cid != "C3"]
    assert len(others) == 7 and all(r["point"] == "holds" for r in others)
    flat = _verdicts(scope([0.5] * 6, [0.3, 0.3, 0.5, 0.5, 0.8, 0.8], pretrained=0.5))
    assert flat["C4"]["point"] is None and "undefined" in flat["C4"]["measured"]  # constant V column: no correlation
    assert flat["C4"]["verdict"] == "inconclusive"
    for head in ("GPT", "nGPT"):
        assert flat[f"C5-{head}"]["point"] == flat[f"C1-{head}"]["point"] == "does not hold"
    gpt_only = _verdicts(GroupScope("b", "frozen", {c: u for c, u in scope([0.7] * 4 + [0.6] * 2, [0.3] * 4 + [0.8] * 2)
                                                    .units.items() if "nGPT" not in c}))
    assert gpt_only["C1-GPT"]["point"] == "holds" and gpt_only["C1-nGPT"]["verdict"] == "not run"


def test_scopes_group_the_main_grid_per_regime_with_pretrained():
    def unit(backbone, condition):
        return {"backbone": backbone, "condition": condition, "metrics": {V: 0.5, CD_R: 0.5}}

    conds = ["Pretrained", "SINCERE-GPT@frozen", "SINCERE-GPT@unfrozen", "SINCERE-GPT@frozen+4labels"]
    units = {f"a/{c}": unit("/models/a", c) for c in conds}
    units["b/Pretrained"] = unit("b", "Pretrained")
    scopes = EXPERIMENT.scopes({"units": units, "config": {}})
    assert [s.name for s in scopes] == ["a, frozen", "a, unfrozen", "b, frozen"]
    assert set(scopes[0].units) == {"Pretrained", "SINCERE-GPT@frozen"}  # the label-count unit is in no group
    assert set(scopes[1].units) == {"Pretrained", "SINCERE-GPT@unfrozen"}
    assert scopes[1].condition("SINCERE-GPT") == "SINCERE-GPT@unfrozen" and scopes[1].condition("Pretrained") == \
        "Pretrained"
    assert set(scopes[2].units) == {"Pretrained"}  # a Pretrained-only backbone


def test_printed_table1():
    assert len(P.PRINTED) == 3 * 7 * 2
    assert {p.condition for p in P.PRINTED} <= set(EXPERIMENT.conditions)
    assert not invalid_keys({p.metric for p in P.PRINTED}, EXPERIMENT)
    from spherekit.experiments.api.printed import find

    assert find(P.PRINTED, "CircularCSE-nGPT@unfrozen", CD_R, "multilingual-e5-large").value == 0.764
    assert find(P.PRINTED, "SoftCSE-nGPT@frozen", CD_R, "Llama-3.2-3B").value == 0.728
    assert find(P.PRINTED, "Pretrained", V, "Qwen3-Embedding-4B").value == 0.495


def test_units_layout_and_metrics(card):
    from spherekit.experiments.circumplex.spec import ALPHA_MAX, ALPHA_MEAN

    results = json.loads((card / "results.json").read_text())
    assert set(results["units"]) == {f"st/{c}" for c in CONDITIONS.split(",")}
    for uid, unit in results["units"].items():
        m = unit["metrics"]
        assert not invalid_keys(m, EXPERIMENT), uid
        assert 0 <= m[V] <= 1 and -1 <= m[CD_R] <= 1, uid
        (run,) = unit["runs"]
        assert unit["seeds"] == [None if uid == "st/Pretrained" else 42], uid  # Pretrained: one no-seed run
        details = run["details"]
        items = run["per_item"]  # what the claims' bootstrap over the test texts reads
        assert len(items["label"]) == len(items["cluster"]) == details["n_test"], uid
        assert [k for k in items if k.startswith("cosine/")] == [f"cosine/{lab}" for lab in details["label_order"]]
        assert all(len(items[f"cosine/{lab}"]) == details["n_test"] for lab in run["labels"]), uid
        assert details["cd_pairs"] == "upper+diagonal" and len(details["circumplex_distance"]) == len(run["labels"])
        assert details["pooling"]["pooling"] == "cls", uid  # the paper's rule for a BERT-like encoder
        n_labels = len(run["labels"])
        assert len(details["label_cosine"]) == n_labels and details["pca_sweep"][-1]["reduced"] is False
        assert len(details["pca_points"]) == details["n_test"] == len(details["pca_labels"])
        if "nGPT" in uid:  # the trained step sizes, read back from the saved head: near their init here
            assert 0 < m[ALPHA_MEAN] <= m[ALPHA_MAX] < 0.2, uid
        else:
            assert ALPHA_MEAN not in m and ALPHA_MAX not in m, uid
    pretrained = results["units"]["st/Pretrained"]["runs"][0]  # pooled as the heads, the backbone's own beside it
    assert "backbone pooling/V-measure" in pretrained["metrics"] and "backbone pooling/cluster" in \
        pretrained["per_item"]
    four = results["units"]["st/CircularCSE-nGPT@frozen+4labels"]
    assert four["runs"][0]["labels"] == ["love", "surprise", "disgust", "calmness"]
    frozen = results["units"]["st/SINCERE-nGPT@frozen"]
    assert frozen["seconds"]["train"] > 0 and "cache" in frozen["seconds"]
    assert frozen["runs"][0]["training"]["encoder"]["steps"] == 2 * -(-6 * 12 // 16)
    assert "cache" not in results["units"]["st/SoftCSE-nGPT@unfrozen"]["seconds"]  # fine-tuning: no cache
    assert (card / "st" / "Pretrained" / "no-seed" / "done").is_file()
    for cond in CONDITIONS.split(",")[1:]:
        d = card / "st" / cond / "seed-42"
        assert (d / "done").is_file() and (d / "checkpoint" / "modules.json").is_file()
        assert not (d / "trainer").exists()
    assert (card / "data" / "token_states").is_dir()  # the frozen runs' shared cache
    by_id = {(r["scope"], r["id"]): r for r in results["claims"]}
    ids = {f"C{i}-{h}" for i in (1, 2, 5) for h in ("GPT", "nGPT")} | {"C3", "C4"}
    assert set(by_id) == {(f"st, {g}", i) for g in ("frozen", "unfrozen") for i in ids}
    assert all(r["verdict"] == "not run" for r in results["claims"])  # the tiny grid lacks runs every claim needs


def test_saved_frozen_model_reloads_on_the_real_backbone(card):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(card / "st" / "SINCERE-nGPT@frozen" / "seed-42" / "checkpoint"),
                                trust_remote_code=True)
    emb = model.encode(["I am so happy today", "a dreadful fright"], convert_to_tensor=True)
    assert emb.shape[0] == 2 and abs(float(emb.norm(dim=1).mean()) - 1.0) < 1e-4


def test_card_report_and_rerender(card):
    report = (card / "report.md").read_text()
    assert "The paper's Table 1" in report and "Label-count study" in report and "departs" in report
    assert "frozen backbone" in report and "unfrozen backbone" in report and "nGPT alpha mean" in report
    assert "Claims of the paper" in report and "| C1-GPT |" in report
    assert "the paper's multilingual-e5-large" in report
    assert "What the frozen nGPT heads measure" in report and "| SINCERE-nGPT |" in report
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
                    str(tmp_path / "o")], "nostalgia", "--set angles_file=FILE")
    angles = tmp_path / "angles.csv"
    angles.write_text("label,angle\nnostalgia,210\n")
    assert main(["reproduce", "circumplex", "--preset", "tiny", "--no-progress", "--backbone", str(backbone_dir),
                 "--data-dir", str(tmp_path / "odd"), "--set", f"angles_file={angles}", "--conditions", "Pretrained",
                 "--out", str(tmp_path / "o")]) == 0


def test_bench_cached_equals_per_step(backbone_dir, tmp_path, capsys):
    from spherekit.experiments.circumplex.bench import run

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
