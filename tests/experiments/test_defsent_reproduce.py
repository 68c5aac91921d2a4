"""`spherekit reproduce defsent` end to end on the tiny preset (a small local backbone): base (one unseeded run), two
PST steps and the ICA variant, one run per seed, only the best run's checkpoint kept, the next step's bank built by
it, bank geometry, the card; resume; a missing checkpoint of the previous step; config validation."""

import json
import re
import shutil

import pytest

from spherekit.cli import main
from spherekit.experiments.api.learning import LEARNED, grade_training
from spherekit.experiments.api.units import unit_runs
from spherekit.experiments.harness import runner
from spherekit.experiments import get
from spherekit.experiments.harness.context import UnitContext
from spherekit.experiments.defsent.noise import STRATA, ceiling
from spherekit.experiments.defsent.run import run_unit
from spherekit.experiments.defsent.spec import (
    DEV_SIM, EXPERIMENT, PROBE, STEP_OF, DefSentConfig, best_run, pooled, reverse_dictionary_key,
)

TRAINED = ("1st-c", "1st-c-printed", "2nd-c", "2nd-c-ica", "1st-c-cls-word")
RD = [reverse_dictionary_key(k) for k in (1, 10, 100)]


def _run(backbone_dir, out, *extra):
    return main(["reproduce", "defsent", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("defsent")
    assert _run(backbone_dir, out) == 0
    return out / "defsent" / "tiny"


def _units(card) -> dict:
    results = json.loads((card / "results.json").read_text())
    return {u["condition"]: u for u in results["units"].values()}


def test_presets_conditions_and_validation():
    for name in EXPERIMENT.presets:
        EXPERIMENT.make_config(name)
    cfg = EXPERIMENT.make_config("cpu-small")
    assert cfg.backbones == ("all-MiniLM-L6-v2",) and cfg.seeds == (0, 1, 2)
    assert cfg.conditions == ("base", "1st-c", "2nd-c", "1st-c-printed", "1st-c-mean-word", "1st-c-lr1e-6",
                              "1st-c-lr3e-6", "1st-c-lr2e-5")  # the LR sweep beside 1st-c's 1e-5
    cpu = EXPERIMENT.make_config("cpu")
    assert cpu.lrs[0] == 2e-5 and {"1st-a-lr1e-6", "1st-a-lr3e-6", "1st-a-lr1e-5"} <= set(cpu.conditions)
    assert "1st-a-lr2e-5" not in cpu.conditions  # 1st-a is the sweep's 2e-5
    assert cpu.lr_of(STEP_OF["1st-a-lr3e-6"]) == 3e-6 and cpu.lr_of(STEP_OF["1st-a"]) == 2e-5
    assert [c for _, c in runner.plan(EXPERIMENT, runner.make_config(EXPERIMENT, "cpu", conditions=["1st-a-lr1e-6"]))] \
        == ["1st-a-lr1e-6"]  # a 1st step: no previous step to run first
    assert cfg.pooler == "mlm-dense"
    assert EXPERIMENT.make_config("cpu").seeds == (0, 1, 2)
    assert EXPERIMENT.make_config("paper").seeds == tuple(range(10))
    narrowed = runner.make_config(EXPERIMENT, "cpu", conditions=["3rd-a-ica"])
    assert [c for _, c in runner.plan(EXPERIMENT, narrowed)] == ["1st-a", "2nd-a", "3rd-a-ica"]
    assert EXPERIMENT.conditions["3rd-a-ica"].requires == ("2nd-a",) and EXPERIMENT.conditions["1st-a"].requires == ()
    chain = runner.make_config(EXPERIMENT, "cpu", conditions=["3rd-a-cls-ac"])  # a grid cell's PST chain
    assert [c for _, c in runner.plan(EXPERIMENT, chain)] == ["1st-a-cls-ac", "2nd-a-cls-ac", "3rd-a-cls-ac"]
    assert chain.combination(STEP_OF["3rd-a-cls-ac"]) == ("cls", "ac") and STEP_OF["3rd-a-cls-ac"].step == 3
    assert {"2nd-a-cls-ac", "3rd-a-cls-ac"} <= set(EXPERIMENT.make_config("cpu").conditions)
    assert not EXPERIMENT.conditions["base"].seeded and EXPERIMENT.conditions["1st-a"].seeded
    assert runner.seeds_of(EXPERIMENT, cfg, "base") == (None,)
    assert runner.seeds_of(EXPERIMENT, cfg, "1st-c") == (0, 1, 2)
    assert EXPERIMENT.make_config("cpu").lrs == (2e-5,) * 3  # one rate for every PST step: no LR confound
    paper = EXPERIMENT.make_config("paper")  # Table 8's grid on a: the config's (cls, amp) is 1st-a, the other three
    grid = {paper.combination(STEP_OF[n]) for n in paper.conditions
            if STEP_OF[n].step == 1 and STEP_OF[n].dictionary == "a"}
    assert grid == {(p, b) for p in ("cls", "mean") for b in ("amp", "ac")} and "1st-c-cls-word" in paper.conditions
    assert "3rd-a-ica" in get("defsent").conditions
    with pytest.raises(ValueError, match="valid conditions"):
        DefSentConfig(conditions=("4th-a",))
    with pytest.raises(ValueError, match="may not exceed the previous step"):
        DefSentConfig(lrs=(1e-5, 2e-5, 1e-5))
    with pytest.raises(ValueError, match="bank_kind must be one of"):
        DefSentConfig(bank_kind="max")
    with pytest.raises(ValueError, match="at least one seed"):
        DefSentConfig(seeds=())
    with pytest.raises(ValueError, match="pooler must be one of"):
        DefSentConfig(pooler="identity")
    with pytest.raises(ValueError, match="train_fraction must be in"):
        DefSentConfig(train_definitions=100, train_fraction=0.5)
    assert DefSentConfig(train_fraction=0.05).pairs_per_epoch(280_000) == 14_000  # the same share of every dictionary
    assert DefSentConfig().pairs_per_epoch(280_000) == 0 and DefSentConfig(train_definitions=8).pairs_per_epoch(9) == 8


def word_vocab(backbone_dir):
    from spherekit.models import load_backbone

    return load_backbone(str(backbone_dir)).tokenizer.get_vocab()


def test_runs_seeds_and_the_best_checkpoint(card, backbone_dir):
    units = _units(card)
    assert set(units) == {"base", *TRAINED}
    for name in TRAINED:
        u = units[name]
        assert u["seeds"] == [0, 1] and [r["seed"] for r in u["runs"]] == [0, 1] and u["spread"]["n"] == 2
        probe = [r["metrics"][pooled(PROBE)] for r in u["runs"]]
        assert u["metrics"][pooled(PROBE)] == pytest.approx(sum(probe) / 2)  # the unit: the mean over seeds
        best = best_run(u["runs"])
        assert best["metrics"][pooled(DEV_SIM)] == max(r["metrics"][pooled(DEV_SIM)] for r in u["runs"])
        for r in u["runs"]:  # only the best run keeps its checkpoint
            assert (card / "st" / name / f"seed-{r['seed']}" / "checkpoint" / "modules.json").is_file() \
                == (r["seed"] == best["seed"]), (name, r["seed"])
            encoder = r["training"]["encoder"]
            assert encoder["steps"] == 3  # 24 pairs, batch 8: one epoch
            assert all(0 <= r["metrics"][k] <= 100 for k in RD)
            assert r["metrics"][RD[0]] <= r["metrics"][RD[1]] <= r["metrics"][RD[2]]
            assert "bank" not in r and "bank" in u["shared"]  # built once per unit: the same for every seed
            # the loss it must reach to have learned: half the uniform softmax's over the bank (the core's gate)
            assert encoder["ceiling"] == pytest.approx(ceiling(u["shared"]["bank"]["entries"]))
            assert "objective" not in r and "items" not in unit_runs(u)[0]  # one run record
            for key in (pooled("wordnet-sim/avg/Spearman"), pooled(PROBE), RD[1]):  # the claims' bootstrap items
                meta = unit_runs(u)[0][STRATA][key]
                assert len(r["per_item"][key]) == sum(n for _, n in meta["strata"])
    first, second = unit_runs(units["1st-c"])[0], unit_runs(units["2nd-c"])[0]
    assert first["bank"]["source"] == "backbone" and second["bank"]["source"] == "1st-c"
    assert first["bank"]["mean_cosine"] != second["bank"]["mean_cosine"]  # built by the trained best run of 1st-c
    assert set(first["rd_untrained"]) == set(RD) and second["rd_untrained"] is None
    base = units["base"]
    assert base["seeds"] == [None] and (card / "st" / "base" / "no-seed" / "done").is_file()
    assert RD[0] not in base["metrics"] and pooled(DEV_SIM) in base["metrics"]
    ica = units["2nd-c-ica"]["shared"]["bank"]
    assert ica["ica"]["whiten"] == "arbitrary-variance" and ica["ica"]["n_iter"] >= 1
    assert ica["ica"]["std"] == pytest.approx(100 / ica["entries"] ** 0.5, rel=0.05)
    assert ica["svd_top1_share"] < second["bank"]["svd_top1_share"]
    assert first["dictionary"]["entries"] == 60 and first["dictionary"]["held_out"] == 10
    word = unit_runs(units["1st-c-cls-word"])[0]  # DefSent's baseline: same dictionary, the word-embedding bank
    assert word["combination"] == ["cls", "word"] and word["dictionary"] == first["dictionary"]
    assert word["bank"]["entries"] == len(word_vocab(backbone_dir))  # DefSent: a softmax over the whole vocabulary
    assert word["defsent_head"]["source"].startswith("fitted") and word["pooler"] == "mlm-transform"
    assert first["pooler"] == "mlm-dense" and first["mlm_head"] == word["mlm_head"]  # one fitted head per data
    assert unit_runs(units["1st-c-printed"])[0]["pooler"] == "backbone"


def _learned(run) -> bool:
    return grade_training(run["training"]["encoder"])[0] == LEARNED


def test_card_and_resume(card, backbone_dir, capsys):
    report = (card / "report.md").read_text()
    for heading in ("## Results on st", "### Table 1", "### Table 2", "### Table 8", "### Tables 3 and 6",
                    "### Table 7", "### ICA bank vs quasi-isotropic bank", "### Figures 1-7",
                    "## Claims of the paper", "## Where this run departs from the paper"):
        assert heading in report
    assert "offline proxies (no STS files)" in report and "9,647" in report
    results = json.loads((card / "results.json").read_text())
    claims = {r["id"]: r for r in results["claims"]}
    units = _units(card)
    c, word = (units[n]["metrics"][pooled("wordnet-sim/avg/Spearman")] for n in ("1st-c", "1st-c-cls-word"))
    defsent = claims["T2-DefSent (1st-c-cls-word)"]
    assert defsent["measured"].startswith(f"1st-c {c:.2f} vs 1st-c-cls-word {word:.2f} ({c - word:+.2f})")
    assert "(+0.25 to +3.20 STS avg)" in defsent["statement"] and defsent["value"] == pytest.approx(c - word)
    lo, hi = defsent["interval"]  # the two-level bootstrap over the seeds and the test pairs
    assert lo <= c - word + 1e-6 and c - word - 1e-6 <= hi and "two-level bootstrap over" in defsent["uncertainty"]
    stuck = [n for n in ("1st-c", "1st-c-cls-word") if not all(_learned(r) for r in unit_runs(units[n]))]
    expect = "inconclusive" if stuck or lo <= 0 < hi else "holds" if lo > 0 else "does not hold"
    assert defsent["verdict"] == expect and ("rests on trainings that did not learn" in defsent["measured"]) == \
        bool(stuck)
    assert "| 1st-c-cls-word |" in report and "75.11 ± 0.21" in report  # DefSent's row of Table 2 beside ours
    table8_c = next(line for line in report.splitlines() if line.startswith("| (cls, amp) | 1st-c | "))
    assert table8_c.endswith("| - | - |")  # the paper's Table 8 is on dictionary a only
    untrained = next(line for line in report.splitlines() if line.startswith("base (the starting encoder"))
    rd = units["1st-c"]["shared"]["rd_untrained"]
    assert f"1st-c {rd[RD[0]]:.2f} / {rd[RD[1]]:.2f} / {rd[RD[2]]:.2f}" in untrained
    assert "1st-c-cls-word " in untrained and "2nd-c" not in untrained  # 1st steps only
    banks = {n: units[n]["shared"]["bank"] for n in ("1st-c", "2nd-c", "2nd-c-ica")}
    cos, top1 = ([banks[n][k] for n in ("1st-c", "2nd-c")] for k in ("mean_cosine", "svd_top1_share"))
    isotropic = claims["F1-2 (dictionary c)"]
    builder_learned = all(_learned(r) for r in unit_runs(units["1st-c"]))  # it built the 2nd bank
    falls = "holds" if cos[0] > cos[1] and top1[0] > top1[1] else "does not hold"
    assert isotropic["point"] == (falls if builder_learned else None)
    # each bank keeps bootstrap replicates of both measures: the smallest fall's paired interval decides
    assert all(len(banks[n]["replicates"][k]) == 500 for n in banks for k in ("mean_cosine", "svd_top1_share"))
    lo, hi = isotropic["interval"]
    decided = "holds" if lo > 0 else "does not hold" if hi <= 0 else "inconclusive"
    assert isotropic["verdict"] == (decided if builder_learned else "inconclusive")
    assert "the same resamples for every step's bank" in isotropic["uncertainty"]
    assert isotropic["measured"].startswith(f"1st bank {cos[0]:.3f} / {top1[0]:.3f}, 2nd bank {cos[1]:.3f} / "
                                            f"{top1[1]:.3f}")
    ica, plain = banks["2nd-c-ica"], banks["2nd-c"]
    heavier = ica["abs_skew"] > plain["abs_skew"] and ica["excess_kurtosis"] > plain["excess_kurtosis"]
    assert claims["F3 (2nd-c)"]["verdict"] == ("holds" if heavier else "does not hold")
    assert claims["F3 (2nd-c)"]["sanity"]  # FastICA maximises non-Gaussianity: a check, not a claim
    assert claims["T2-size"]["verdict"] == "not run" and claims["T3 (1st-c)"]["verdict"] != "not run"
    assert sorted(p.name for p in (card / "plots").iterdir()) == ["st_banks.png", "st_proxies.png"]
    capsys.readouterr()
    assert _run(backbone_dir, card.parent.parent) == 0
    assert capsys.readouterr().err.count("done earlier (reused") == 1 + 2 * len(TRAINED)
    assert _units(card)["1st-c"]["metrics"] == units["1st-c"]["metrics"]


def test_the_retrain_command_brings_back_a_missing_checkpoint_alone(card, backbone_dir, capsys):
    """What the missing-checkpoint error tells a user after `restore`: re-training the best run alone saves its
    model again and leaves the other runs, and the next step that builds on it, as they were."""
    best = best_run(_units(card)["1st-c"]["runs"])["seed"]
    other = card / "st" / "1st-c" / f"seed-{1 - best}" / "done"
    kept = other.stat().st_mtime_ns
    shutil.rmtree(card / "st" / "1st-c" / f"seed-{best}" / "checkpoint")
    assert _run(backbone_dir, card.parent.parent, "--conditions", "1st-c", "--seed", str(best), "--force") == 0
    assert (card / "st" / "1st-c" / f"seed-{best}" / "checkpoint" / "modules.json").is_file()
    assert other.stat().st_mtime_ns == kept
    capsys.readouterr()
    assert _run(backbone_dir, card.parent.parent) == 0  # the same run again: 2nd-c's bank source is unchanged
    assert capsys.readouterr().err.count("done earlier (reused") == 1 + 2 * len(TRAINED)


def test_a_missing_checkpoint_of_the_previous_step_is_a_clear_error(backbone_dir, tmp_path):
    """After `restore`, the previous step's runs have metrics but no model: the best of them (seed 1 here) is
    named, with what to do."""
    previous = tmp_path / "st" / "1st-c"
    runs = [{"seed": s, "dir": previous / f"seed-{s}", "result": {"seed": s, "metrics": {pooled(DEV_SIM): float(s)}}}
            for s in (0, 1)]
    ctx = UnitContext(experiment=EXPERIMENT, cfg=EXPERIMENT.make_config("tiny"), backbone=str(backbone_dir),
                      condition=EXPERIMENT.conditions["2nd-c"], seed=0, data=None,
                      run_dir=tmp_path / "st" / "2nd-c" / "seed-0", root=tmp_path, fingerprint="f",
                      unit_fingerprint="u", progress=False, is_main=True, requirements={"1st-c": runs})
    with pytest.raises(FileNotFoundError, match=r"1st-c/seed-1/checkpoint is missing: .* best run of 1st-c \(seed 1 "
                                                r"on the dev proxy\).* re-train that run alone first: " + re.escape(
                                                f"spherekit reproduce defsent --preset {tmp_path.name} --backbone "
                                                f"{backbone_dir} --conditions 1st-c --seed 1 --force --out "
                                                f"{tmp_path.parent.parent}") + "$"):
        run_unit(ctx)
