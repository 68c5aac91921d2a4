"""The DefSent+ claims as checks on hand-made units: Table 8's AMP-vs-AC grid on dictionary a (whichever combination
the config trains as plain `1st-a`), the bank-geometry claims of Figures 1-3, claims checked once per condition,
the best run's pooling, NaN and missing units; the printed numbers; the untrained pooler's reverse dictionary under
Table 2."""

from spherekit.experiments.claims import Scope, evaluate
from spherekit.experiments.defsent import paper as P
from spherekit.experiments.defsent.figures import table2
from spherekit.experiments.defsent.spec import DEV_SIM, PROBE, SIM, pooled, reverse_dictionary_key
from spherekit.experiments.printed import find

SIM_B, PROBE_B, DEV_B = pooled(SIM), pooled(PROBE), pooled(DEV_SIM)


def run(seed, sim, dev=None, pooling="mean", **extra):
    return {"seed": seed, "metrics": {SIM_B: sim, PROBE_B: 50.0, DEV_B: sim if dev is None else dev},
            "best_pooling": pooling, **extra}


def unit(sim, combination=("mean", "amp"), bank=None, probe=50.0, runs=None, **extra):
    """A unit whose metrics are `sim` / `probe` (the mean over its runs) and whose runs record the extras."""
    extra = {"combination": list(combination), **({"bank": dict(bank)} if bank else {}), **extra}
    runs = runs or [run(0, sim)]
    return {"metrics": {SIM_B: sim, PROBE_B: probe}, "spread": {"std": {SIM_B: 0.1, PROBE_B: 0.1}},
            "runs": [{**r, **extra} for r in runs]}


def bank(cos, top1, skew=0.1, kurt=0.5):
    return {"mean_cosine": cos, "svd_top1_share": top1, "abs_skew": skew, "excess_kurtosis": kurt}


def verdicts(units) -> dict[str, dict]:
    return {r["id"]: r for r in evaluate(P.CLAIMS, [Scope("m", units)])}


def test_table8_grid_uses_the_recorded_combination_of_plain_1st_a():
    units = {"base": unit(60.0), "1st-a": unit(62.0, ("mean", "amp")), "1st-a-mean-ac": unit(61.0, ("mean", "ac")),
             "1st-a-cls-amp": unit(63.0, ("cls", "amp")), "1st-a-cls-ac": unit(63.5, ("cls", "ac")),
             "1st-c-cls-ac": unit(70.0, ("cls", "ac"))}  # dictionary c: not Table 8's grid
    got = verdicts(units)["T8"]
    assert "BERT-base: cls +2.78 / mean +2.88" in got["statement"] and got["verdict"] == "does not hold"
    assert got["measured"] == "(cls, amp) 63.00 vs (cls, ac) 63.50, (mean, amp) 62.00 vs (mean, ac) 61.00"
    units["1st-a-cls-ac"] = unit(62.5, ("cls", "ac"))
    assert verdicts(units)["T8"]["verdict"] == "holds"
    del units["1st-a-mean-ac"], units["1st-a-cls-ac"]  # no AC unit on a: not run
    assert verdicts(units)["T8"]["verdict"] == "not run"


def test_geometry_claims_need_both_isotropy_measures_to_fall():
    units = {"1st-a": unit(62.0, bank=bank(0.20, 0.30)), "2nd-a": unit(63.0, bank=bank(0.10, 0.15)),
             "3rd-a": unit(63.5, bank=bank(0.05, 0.16, skew=0.1, kurt=0.2)),
             "3rd-a-ica": unit(63.0, bank=bank(0.0, 0.01, skew=0.9, kurt=4.0))}
    got = verdicts(units)["F1-2 (dictionary a)"]
    assert got["measured"] == "1st bank 0.200 / 0.300, 2nd bank 0.100 / 0.150, 3rd bank 0.050 / 0.160"
    assert got["verdict"] == "does not hold"
    units["3rd-a"]["runs"][0]["bank"]["svd_top1_share"] = 0.12
    assert verdicts(units)["F1-2 (dictionary a)"]["verdict"] == "holds"
    got = verdicts(units)["F3 (3rd-a)"]
    assert got["measured"] == "|skew| 0.90 vs 0.10, excess kurtosis 4.00 vs 0.20" and got["verdict"] == "holds"
    units["3rd-a-ica"]["runs"][0]["bank"]["excess_kurtosis"] = 0.1  # skewed but lighter-tailed: does not hold
    assert verdicts(units)["F3 (3rd-a)"]["verdict"] == "does not hold"
    assert "ICA" not in " ".join(r["statement"] for r in verdicts(units).values() if r["id"].startswith("T2"))


def test_per_condition_claims_and_missing_units():
    units = {"base": unit(60.0, probe=50.0), "1st-c": unit(62.0, probe=49.0),
             "1st-c-mean-word": unit(55.0, ("mean", "word"), probe=45.0), "2nd-c": unit(61.0, probe=53.5)}
    got = verdicts(units)
    assert got["T3 (1st-c)"]["verdict"] == "holds" and got["T3 (1st-c)"]["value"] == 2.0
    assert got["T2-DefSent (1st-c-mean-word)"]["verdict"] == "holds"
    assert got["T2-PST (dictionary c)"]["verdict"] == "does not hold"  # 62 -> 61
    assert got["T4 (1st-c)"]["verdict"] == "holds" and got["T4 (1st-c)"]["measured"] == "-1.00 points"
    assert got["T4 (1st-c-mean-word)"]["verdict"] == "does not hold"  # -5: below -1.48
    assert got["T4 (2nd-c)"]["verdict"] == "does not hold"  # +3.5: above +3.01
    assert got["T2-size"]["verdict"] == "not run" and got["T2-size"]["measured"].startswith("needs at least two")
    units["1st-c"]["runs"] = [{**r, "combination": ["cls", "amp"]} for r in units["1st-c"]["runs"]]
    assert verdicts(units)["T2-DefSent"]["verdict"] == "not run"  # no word bank trained with CLS pooling
    nan = dict(units, **{"1st-b": unit(float("nan"))})
    assert verdicts(nan)["T2-size"]["verdict"] == "inconclusive" and verdicts(nan)["T3 (1st-b)"]["verdict"] == \
        "inconclusive"
    assert all(r["verdict"] == "not run" for r in verdicts({}).values())


def test_prompt_pooling_is_read_from_each_units_best_run():
    prompt_best = [run(0, 60.0, dev=1.0, pooling="mean"), run(1, 61.0, dev=2.0, pooling="prompt")]
    units = {"base": unit(60.0, runs=[run(None, 60.0, pooling="prompt")]), "1st-c": unit(61.0, runs=prompt_best),
             "1st-b": unit(61.0, runs=[run(0, 60.0, pooling="mean")])}
    got = verdicts(units)["T7"]
    assert got["verdict"] == "holds" and got["measured"].endswith(": prompt, prompt, mean")
    units["1st-c"]["runs"][1]["metrics"][DEV_B] = 0.5  # seed 0 is now the best run
    assert verdicts(units)["T7"]["verdict"] == "does not hold"


def test_printed_numbers():
    assert find(P.PRINTED, "1st-a", P.STS_BEST, "BERT-base").value == 77.88
    assert find(P.PRINTED, "1st-a", P.STS_BEST, "BERT-base").std == 0.22
    assert find(P.PRINTED, "1st-c-cls-word", P.STS_BEST, "RoBERTa-large").value == 74.19  # DefSent's row
    assert find(P.PRINTED, "1st-a-mean-ac", P.STS_BEST, "RoBERTa-base").value == 78.44  # Table 8
    assert find(P.PRINTED, "2nd-a-ica", P.STS_BEST, "BERT-large").value == 79.42  # the text of sec. 4.1
    assert find(P.PRINTED, "2nd-a-ica", P.STS_BEST, "RoBERTa-base") is None


def test_untrained_pooler_reverse_dictionary_under_table2():
    rd = {reverse_dictionary_key(1): 0.5, reverse_dictionary_key(10): 2.0, reverse_dictionary_key(100): 9.25}
    base = {"metrics": {SIM_B: 60.0}, "runs": [run(None, 60.0)]}  # one evaluation, no seeds
    units = {"base": base, "1st-c": unit(62.0, rd_untrained=rd), "2nd-c": unit(63.0, rd_untrained=None)}
    text = table2(Scope("m", units))
    base_row = next(line for line in text.splitlines() if line.startswith("| base |"))
    assert base_row.startswith("| base | 60.00 | - | - | - | - |")  # base has no trained pooler: no RD
    assert text.endswith("against each 1st step's bank, RD Acc@1 / @10 / @100: 1st-c 0.50 / 2.00 / 9.25.")
    first_c = next(line for line in text.splitlines() if line.startswith("| 1st-c |"))
    assert first_c.endswith("| 62.00 (0) | 75.36 ± 0.22 | 75.92 ± 0.19 |")  # best run (seed), the paper's Table 2
