"""`spherekit reproduce textbook` end to end on the tiny preset (a small local backbone): every section is a
unit with its metrics (keys of the metric vocabulary), the card checks each chapter statement with a verdict,
plots are written, and a rerun reuses finished runs (--force redoes the chosen ones)."""

import json

import pytest

from spherekit.cli import main
from spherekit.experiments import get
from spherekit.experiments.api.config import fingerprint
from spherekit.experiments.api.metrics import invalid_keys
from spherekit.experiments.textbook.data import DATA_FIELDS
from spherekit.experiments.textbook.paper import CLAIMS
from spherekit.experiments.textbook.spec import EXPERIMENT, PRESETS, SECTIONS, TextbookConfig

SANITY = {"listings-2", "listings-3", "concentration-1", "thresholds-1"}
BOOTSTRAPPED = ("listings-1", "concentration-2", "pooling-1", "pooling-2", "losses-1", "mining-1", "mining-2",
                "thresholds-2", "ann-1", "order-1", "order-2")


def _run(backbone_dir, out, *extra):
    return main(["reproduce", "textbook", "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def card(backbone_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("textbook")
    assert _run(backbone_dir, out) == 0
    return out


def _results(card):
    return json.loads((card / "textbook" / "tiny" / "results.json").read_text())


def test_presets_and_validation():
    for name in PRESETS:
        EXPERIMENT.make_config(name)
    assert EXPERIMENT.make_config("cpu").backbones == ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
    assert set(get("textbook").conditions) == set(SECTIONS) and len(SECTIONS) == 8
    assert [c for c, cond in EXPERIMENT.conditions.items() if not cond.seeded] == ["ann"]
    assert EXPERIMENT.select(["ann", "order"]) == {"sections": ("ann", "order")}
    with pytest.raises(ValueError, match="valid sections"):
        TextbookConfig(sections=("listings", "nope"))
    with pytest.raises(ValueError, match="num_negatives"):
        TextbookConfig(top_k=3, num_negatives=5)
    with pytest.raises(ValueError, match="unknown preset"):
        EXPERIMENT.make_config("gpu")


def test_seeds_and_sections_choose_runs_the_data_seed_changes_results():
    cfg = TextbookConfig()
    assert fingerprint(TextbookConfig(seeds=(1, 2), sections=("ann",))) == fingerprint(cfg)
    assert fingerprint(TextbookConfig(data_seed=1)) != fingerprint(cfg)
    assert "data_seed" in DATA_FIELDS and "seeds" not in DATA_FIELDS


def test_every_section_is_a_unit_with_metrics(card):
    results = _results(card)
    assert set(results["units"]) == {f"st/{s}" for s in SECTIONS}
    root = card / "textbook" / "tiny" / "st"
    assert (root / "ann" / "no-seed" / "done").is_file() and (root / "order" / "seed-0" / "done").is_file()
    units = {u["condition"]: u for u in results["units"].values()}
    for unit in units.values():
        assert not invalid_keys(unit["metrics"], EXPERIMENT), unit["condition"]
    details = {c: u["runs"][0]["details"] for c, u in units.items()}
    m = units["listings"]["metrics"]
    assert m["listing3/max abs diff (chapter vs spherekit MNRL)"] < 1e-5 and m["listing4/positives returned"] == 0
    assert m["listing4/agrees (sentence-transformers mine_hard_negatives)"] is True
    for row in details["concentration"]["random"]:
        assert row["expected"] == pytest.approx(row["d"] ** -0.5, rel=1e-3)
        assert row["std"] == pytest.approx(row["expected"], rel=0.05)
    k = results["config"]["eval_k"]
    for section, prefix in (("pooling", "frozen/"), ("losses", ""), ("mining", "")):
        values = [v for key, v in units[section]["metrics"].items() if key.startswith(prefix) and f"/R@{k}" in key]
        assert values and all(0 <= v <= 1 for v in values), section
    rounds = details["mining"]["chains"]["hard"]
    assert [r["miner"] for r in rounds] == ["bm25", "model"] and rounds[1]["overlap_with_previous"] is not None
    assert details["mining"]["queries"] == "examples" and all(r["negatives_drawn"] > 0 for r in rounds)
    n_sentences = results["data"]["example_test_queries"]
    assert units["mining"]["metrics"]["count (test queries)"] == n_sentences > 0
    per_item = {c: u["runs"][0]["per_item"] for c, u in units.items()}
    assert all(len(v) == n_sentences for v in per_item["mining"].values()), per_item["mining"].keys()
    assert len(per_item["thresholds"]["sentences/label (evaluation pairs)"]) % 3 == 0
    n_terms = results["data"]["test_queries"]
    for section in ("concentration", "pooling", "losses"):
        assert per_item[section] and all(len(v) == n_terms for v in per_item[section].values()), section
    assert len(per_item["ann"]) == len(details["ann"]["rows"]) and len(per_item["order"]) == 3
    # listing 1 and the role swaps on a set: one value per sentence with a synonym paraphrase / per role swap
    gaps = per_item["listings"]["paraphrases/cosine gap (paraphrase - unrelated)"]
    assert len(gaps) == m["paraphrases/count"] >= 2 and all(-2 <= g <= 2 for g in gaps)
    assert m["paraphrases/cosine gap (mean)"] == pytest.approx(sum(gaps) / len(gaps), abs=1e-4)
    swaps = per_item["order"]["role swaps/cosine"]
    assert len(swaps) == units["order"]["metrics"]["role swaps/count"] >= 3  # the chapter's three pairs at least
    assert swaps[-3] == pytest.approx(details["order"]["examples"][0]["cosine"]["role_swap"], abs=1e-6)
    curve = details["losses"]["curves"]["mnrl"]
    assert curve[0]["step"] == 0 and curve[-1]["step"] == results["config"]["steps"]
    ann = details["ann"]
    assert {r["method"] for r in ann["rows"]} == {"ivf", "hnsw"} and all(0 <= r["recall"] <= 1 for r in ann["rows"])
    order = details["order"]
    assert order["examples"][0]["query"] == "the patient was treated by the doctor"
    # every training a section did is one of its run's "training" records, named by what it trained
    training = {c: u["runs"][0].get("training", {}) for c, u in units.items()}
    verifier = training["order"]["order verifier"]
    assert verifier["steps"] >= 1 and len(verifier["curve"]["loss"]) == len(verifier["curve"]["step"]) == \
        verifier["steps"]
    assert set(training["losses"]) == {f"losses {x}" for x in ("mnrl", "triplet", "cosine")}
    assert set(training["pooling"]) == {f"pooling {p}" for p in ("cls", "mean", "max")}
    rounds = results["config"]["rounds"]
    assert set(training["mining"]) == {f"mining {c} round {r}" for c in ("hard", "random")
                                       for r in range(1, rounds + 1)}
    assert all("training" not in r for chain in details["mining"]["chains"].values() for r in chain)
    assert not training["listings"] and "training" not in details["pooling"]


def test_card_checks_every_statement_with_a_verdict(card):
    report = (card / "textbook" / "tiny" / "report.md").read_text()
    results = _results(card)
    for section in SECTIONS:
        assert f"### {section}:" in report
    claims = {r["id"]: r for r in results["claims"]}
    assert set(claims) == {c.id for c in CLAIMS} and len(CLAIMS) == 15
    assert {k for k, r in claims.items() if r["sanity"]} == SANITY
    # every claim ran; the tiny backbone learns little in 2 steps, so a training claim may be "inconclusive"
    assert all(r["verdict"] in ("holds", "does not hold", "inconclusive") for r in claims.values()), claims
    assert sum(report.count(f"| **{v}** |") for v in ("holds", "does not hold", "inconclusive")) == len(CLAIMS)
    for cid in BOOTSTRAPPED:  # every comparison carries its interval from the runs' per-item values
        assert claims[cid]["interval"] is not None and "bootstrap" in claims[cid]["uncertainty"], cid
    assert results["comparison"][0]["paper"] == 0.036 and results["comparison"][0]["ours"]["st"] is not None
    plots = sorted(p.name for p in (card / "textbook" / "tiny" / "plots").iterdir())
    assert plots == ["ann.png", "concentration.png", "losses.png", "mining.png", "order.png", "thresholds.png"]


def test_rerun_reuses_units_and_force_redoes_one(card, backbone_dir, capsys):
    before = _results(card)
    assert _run(backbone_dir, card) == 0
    assert capsys.readouterr().err.count("done earlier") == len(SECTIONS)
    assert _run(backbone_dir, card, "--conditions", "concentration", "--force") == 0
    err = capsys.readouterr().err
    assert "done earlier" not in err and "concentration" in err
    after = _results(card)
    assert after["units"]["st/listings"]["metrics"] == before["units"]["st/listings"]["metrics"]
    assert after["units"]["st/concentration"]["metrics"] == before["units"]["st/concentration"]["metrics"]


def test_listing_1_on_a_set_pairs_each_sentence_with_another_ones_text():
    import numpy as np
    from types import SimpleNamespace

    from spherekit.data.nearmiss import NearMiss
    from spherekit.experiments.textbook.sections.listings import paraphrase_gaps

    class Encoder:  # one-hot by sentence number: a paraphrase ("pN") equals its sentence ("sN")
        def encode(self, texts, normalize_embeddings=True):
            return np.eye(8, dtype=np.float32)[[int(t[1:]) for t in texts]]

    def item(i, kind="synonym", family="binding"):
        return NearMiss(f"s{i}", f"p{i}" if kind == "synonym" else f"s{i}", f"n{i}", family, "edit", kind, "text")

    near = SimpleNamespace(train=[item(0), item(0, family="negation"), item(1), item(2, "identity")],
                           test=[item(3), item(4)])
    metrics, gaps = paraphrase_gaps(Encoder(), near, seed=0)
    # distinct anchors with a synonym paraphrase (0, 1, 3, 4): cos(s, p) = 1, cos(s, another sentence) = 0
    assert metrics["paraphrases/count"] == 4 and gaps == [1.0] * 4
    assert metrics["paraphrases/cosine (unrelated, mean)"] == 0.0
    with pytest.raises(ValueError, match="nearmiss_per_family"):
        paraphrase_gaps(Encoder(), SimpleNamespace(train=[item(0)], test=[]), seed=0)


def test_order_plot_draws_the_role_swap_set_and_skips_runs_without_it(tmp_path):
    from spherekit.experiments.textbook.figures import _order

    kept = {"metrics": {"chapter pair/cosine (role swap)": 0.978},
            "runs": [{"seed": 0, "metrics": {}, "per_item": {"role swaps/cosine": [0.95, 0.97, 0.99, 0.978]}}]}
    old = {"metrics": {"chapter pair/cosine (role swap)": 0.978}, "runs": [{"seed": 0, "metrics": {}}]}
    path = _order({"st": kept, "old": old}, {}, tmp_path)
    assert path.name == "order.png" and path.stat().st_size > 0
    assert _order({"old": old}, {}, tmp_path / "none") is None and not (tmp_path / "none").exists()
