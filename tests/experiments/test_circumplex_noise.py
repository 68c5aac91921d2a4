"""The noise of the circumplex claims: the two-level bootstrap over the seeds and the test texts (V-measure of a fixed
assignment, CD-r from linearised resampled label-pair cosines), the core's gate on the trainings the claims rest on,
and the claims built on them, on synthetic units: each new rule can hold, fail and be inconclusive."""

import functools
import math

import numpy as np
import pytest
import torch
from spherekit.data.emotion import ANGLES, EMOTIONS
from spherekit.evaluation.clustering import v_measure
from spherekit.experiments.circumplex import evaluate as ev
from spherekit.experiments.circumplex import noise
from spherekit.experiments.circumplex import paper as P
from spherekit.experiments.circumplex.spec import (
    CD_R,
    PRETRAINED,
    TRAINED_RUNS,
    GroupScope,
    Run,
    V,
)
from spherekit.experiments.api.claims import evaluate
from spherekit.experiments.api.uncertainty import PER_ITEM, two_level
from spherekit.experiments.api.units import aggregate

N_PER = 30
FALLING = [5.0 - 0.1 * i + 0.01 * (i % 2) for i in range(30)]  # learns: -58 %, far beyond its noise
FLAT = [5.0 + 0.02 * (i % 3) for i in range(30)]  # does not: no fall
SLOW = [5.0 - 0.003 * i for i in range(30)]  # barely moves: -1.7 %


def _points(kind: str, noise_level: float, seed: int):
    """n_per noisy copies per label of a ring (centroid at the label's angle) or a simplex (orthogonal)."""
    g = torch.Generator().manual_seed(seed)
    if kind == "ring":
        th = torch.tensor([math.radians(ANGLES[e]) for e in EMOTIONS], dtype=torch.float64)
        c = torch.zeros(12, 16, dtype=torch.float64)
        c[:, 0], c[:, 1] = torch.cos(th), torch.sin(th)
    else:
        c = torch.eye(12, 16, dtype=torch.float64)
    x = torch.cat([row + noise_level * torch.randn(N_PER, 16, generator=g, dtype=torch.float64) for row in c])
    return x, [e for e in EMOTIONS for _ in range(N_PER)]


@functools.cache
def _measured(kind: str, noise_level: float, seed: int) -> tuple[dict, dict, dict]:
    x, labels = _points(kind, noise_level, seed)
    r = ev.evaluate_embeddings(x, labels, ANGLES, n_init=2)
    details = {"label_order": r["label_order"], noise.CD: r["circumplex_distance"], noise.PAIRS: "upper+diagonal"}
    return {V: r["v_measure"], CD_R: r["cd_r"]}, details, noise.record_of(r["per_item"], r["label_order"])


def _run(kind: str, noise_level: float, seed: int, curve=FALLING) -> dict:
    """A run record as the runner writes it: metrics, details, per_item, training."""
    metrics, details, items = _measured(kind, noise_level, seed)
    run = {"seed": seed, "metrics": dict(metrics), "details": details, PER_ITEM: items}
    if curve is not None:
        run["training"] = {"encoder": {"steps": len(curve) * 5, "curve": {"step": list(range(len(curve))),
                                                                          "loss": curve}}}
    return run


def _scope(kinds: dict, seeds=(0,), curves=None) -> GroupScope:
    """A frozen group: {run name: (kind, noise[, draw])} for the six trained runs and Pretrained, as card units (a
    run's noise is drawn with its seed + draw)."""
    units = {}
    for name, (kind, level, *draw) in kinds.items():
        cond = PRETRAINED if name == PRETRAINED else Run(name, "frozen").name
        run_seeds = (None,) if name == PRETRAINED else seeds
        curve = None if name == PRETRAINED else (curves or {}).get(name, FALLING)
        runs = [_run(kind, level, (s or 0) + sum(draw), curve) | {"seed": s} for s in run_seeds]
        units[cond] = aggregate("b", cond, runs)
    return GroupScope("b", "frozen", units)


# V-measure / CD-r on 360 texts: simplex 0.3 about 0.86 / 0.59, ring 0.3 about 0.58 / 0.92, ring 2.0 about 0.10 / 0.76
PAPER_LIKE = {PRETRAINED: ("ring", 2.0), **{r: ("simplex", 0.3) for r in TRAINED_RUNS[:4]},
              "CircularCSE-GPT": ("ring", 0.3), "CircularCSE-nGPT": ("ring", 0.3, 5)}


def _verdicts(scope):
    return {r["id"]: r for r in evaluate(P.CLAIMS, [scope])}


@pytest.fixture(scope="module")
def paper_like():
    return _verdicts(_scope(PAPER_LIKE, seeds=(0, 1)))


# ------------------------------------------------------------------ the per-text statistics

def test_per_text_statistics_reproduce_the_metrics_and_resample_exactly():
    x, labels = _points("ring", 0.3, 0)
    r = ev.evaluate_embeddings(x, labels, ANGLES, n_init=3)
    details = {"label_order": r["label_order"], noise.CD: r["circumplex_distance"], noise.PAIRS: "upper+diagonal"}
    texts = noise.Texts({"details": details, PER_ITEM: noise.record_of(r["per_item"], r["label_order"])})
    ones = np.ones((1, texts.n))
    assert texts.v_measure(ones)[0] == pytest.approx(r["v_measure"], abs=1e-12)
    assert texts.cd_r(ones)[0] == pytest.approx(r["cd_r"], abs=1e-4)  # 4-decimal cosines
    assert np.allclose(texts.a, r["label_cosine"], atol=1e-4)
    draws = np.random.default_rng(3).integers(0, texts.n, (2, texts.n))
    w = np.stack([np.bincount(d, minlength=texts.n) for d in draws]).astype(float)
    for row, idx in enumerate(draws):  # a resample = the metric on the drawn texts, with repeats
        assert texts.v_measure(w)[row] == pytest.approx(v_measure(texts.label[idx], texts.cluster[idx]), abs=1e-12)
    # the linearised resample of AvgCosSim(i, j) = m_i . m_j misses exactly the second-order term dm_i . dm_j
    idx, ids = draws[0], texts.label[draws[0]]
    e = torch.nn.functional.normalize(x, dim=1).numpy()
    full = np.stack([e[texts.label == i].mean(0) for i in range(12)])
    resampled = np.stack([e[idx[ids == i]].mean(0) for i in range(12)])
    shift = resampled - full
    m = texts.mean_cosine(w[:1])[0]
    assert np.allclose(resampled @ resampled.T - (m + m.T - texts.a), shift @ shift.T, atol=2e-4)
    without_love = (texts.label != 0).astype(float)[None]  # a resample without love: CD-r undefined
    assert math.isnan(texts.cd_r(without_love)[0]) and not math.isnan(texts.v_measure(without_love)[0])


def test_measure_is_the_two_level_bootstrap_of_the_seed_mean_statistic():
    scope = _scope(PAPER_LIKE, seeds=(0, 1, 2))
    cond = Run("SINCERE-GPT", "frozen").name
    per_run = [run["metrics"][V] for run in scope.runs(cond)]
    got = noise.measure(scope, [(cond, "")], lambda get: get(cond, V))
    assert got.value == pytest.approx(scope.metric(cond, V), abs=1e-12)  # every text and seed once: the card's mean
    assert got.seed_std == pytest.approx(np.std(per_run, ddof=1), abs=1e-12)  # run j of the unit, all texts
    assert got.interval[0] < got.value < got.interval[1] and got.seeds_measured
    assert got.uncertainty.startswith(f"two-level bootstrap over seeds ({cond} 3) and 360 test texts")
    # the same draws by hand (two_level with its default seed): on text weights w and seed multiplicities v of a
    # draw, the unit's V-measure is sum_s v_s V_s(w) / 3, V_s the run of seed s's weighted contingency V-measure
    texts = noise.texts(scope, cond)
    by_hand = two_level(lambda d: (d.seeds[cond] * np.stack([t.v_measure(d.items) for t in texts], 1)).sum(1) / 3,
                        360, {cond: 3})
    assert got.interval == pytest.approx(by_hand.interval, abs=1e-12)
    one_seed = _scope(PAPER_LIKE)
    one = noise.measure(one_seed, [(cond, "")], lambda get: get(cond, V))
    assert one.seed_std is None and one.uncertainty.startswith("bootstrap over 360 test texts; training noise "
                                                               f"unmeasured: 1 run of {cond}")
    (text,) = noise.texts(one_seed, cond)
    assert one.interval == pytest.approx(two_level(lambda d: text.v_measure(d.items), 360, {cond: 1}).interval)


# ------------------------------------------------------------------ the claims on per-text units

def test_claims_hold_with_intervals_on_paper_like_units(paper_like):
    assert set(paper_like) == {"C1-GPT", "C1-nGPT", "C2-GPT", "C2-nGPT", "C3", "C4", "C5-GPT", "C5-nGPT"}
    for cid, r in paper_like.items():
        assert r["verdict"] == "holds", (cid, r["measured"], r["interval"])
        assert r["interval"] is not None and "two-level bootstrap over seeds" in r["uncertainty"], cid
        assert "and 360 test texts resampled together" in r["uncertainty"] and r["seed_std"] > 0, cid
        lo, hi = r["interval"]
        assert lo <= hi and (lo > 0 if r["op"] == ">" else hi < 0), cid


def test_reversed_units_do_not_hold():
    swapped = {**PAPER_LIKE, **{r: ("ring", 0.3) for r in TRAINED_RUNS[:4]},
               "CircularCSE-GPT": ("simplex", 0.3), "CircularCSE-nGPT": ("simplex", 0.3, 5)}
    got = _verdicts(_scope(swapped))
    for cid in ("C1-GPT", "C1-nGPT", "C2-GPT", "C2-nGPT", "C3"):
        assert got[cid]["verdict"] == "does not hold", (cid, got[cid]["measured"], got[cid]["interval"])
    aligned = {**PAPER_LIKE, **{r: ("ring", 0.25) for r in TRAINED_RUNS[:3]},
               **{r: ("ring", 2.0, 3) for r in TRAINED_RUNS[3:]}}  # V and CD-r fall together
    got = _verdicts(_scope(aligned))["C4"]
    assert got["verdict"] == "does not hold" and got["interval"][0] > 0, got
    stuck = _verdicts(_scope({**PAPER_LIKE, PRETRAINED: ("simplex", 0.2)}))  # Pretrained clusters best
    assert stuck["C5-GPT"]["verdict"] == stuck["C5-nGPT"]["verdict"] == "does not hold"


def test_a_difference_inside_the_noise_is_inconclusive():
    # CircularCSE-nGPT = SINCERE-nGPT's geometry with other noise: C1 (nGPT)'s gap is about 0 on 360 texts
    same = {**PAPER_LIKE, "CircularCSE-nGPT": ("simplex", 0.3, 7)}
    r = _verdicts(_scope(same))["C1-nGPT"]
    assert r["verdict"] == "inconclusive" and r["interval"][0] < 0 < r["interval"][1], r


def test_a_training_that_did_not_learn_makes_the_claims_resting_on_it_inconclusive():
    got = _verdicts(_scope(PAPER_LIKE, seeds=(0, 1), curves={"SINCERE-nGPT": FLAT, "SoftCSE-nGPT": SLOW}))
    for cid in ("C1-nGPT", "C2-nGPT", "C3", "C4", "C5-nGPT"):
        assert got[cid]["verdict"] == "inconclusive", cid
        text = got[cid]["measured"]
        assert "; rests on trainings that did not learn (did not learn: SINCERE-nGPT@frozen seed 0 encoder (" in text
        assert "SINCERE-nGPT@frozen seed 1 encoder (" in text and "no fall)" in text, cid
        assert got[cid]["interval"] is not None and got[cid]["value"] is not None  # the measurement stays
    for cid in ("C1-nGPT", "C3", "C4", "C5-nGPT"):  # SoftCSE-nGPT's loss fell by under 5%: graded apart
        assert "barely moved: SoftCSE-nGPT@frozen seed 0 encoder (4.991 -> 4.922 (-1.4%, a fall under 5%))" in \
            got[cid]["measured"], cid
    assert "SoftCSE" not in got["C2-nGPT"]["measured"]  # C2 rests on SINCERE and CircularCSE only
    for cid in ("C1-GPT", "C2-GPT", "C5-GPT"):  # the GPT half does not rest on the nGPT trainings
        assert got[cid]["verdict"] == "holds", cid


def test_units_without_per_item_values_are_inconclusive_with_their_point_values():
    units = {Run(r, "frozen").name: {"metrics": {V: 0.7 if "Circular" not in r else 0.5,
                                                 CD_R: 0.3 if "Circular" not in r else 0.8},
                                     "runs": [{"seed": 42, "metrics": {}}]} for r in TRAINED_RUNS}
    units[PRETRAINED] = {"metrics": {V: 0.1, CD_R: 0.5}, "runs": [{"seed": None, "metrics": {}}]}
    got = _verdicts(GroupScope("b", "frozen", units))
    assert all(r["point"] == "holds" and r["interval"] is None for r in got.values())
    assert all(r["verdict"] == "inconclusive" and "its noise was not measured" in r["measured"] for r in got.values())
    assert all("no per-item values" in r["uncertainty"] for r in got.values())
