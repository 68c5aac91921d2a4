"""The DefSent+ card's claims on hand-made unit results: Table 8's AMP-vs-AC grid on dictionary a (whichever
combination the config trains as plain `1st-a`), the bank-geometry claims of Figures 1-3, and the untrained
pooler's reverse dictionary under Table 2."""

from spherekit.experiments.defsent.report import claims, table2


def _unit(sim, combination=("mean", "amp"), bank=None, **extra):
    scores = {"sim_avg/best": sim, "probe_avg/best": 50.0}
    u = {"metrics": dict(scores), "mean": dict(scores),
         "std": {"sim_avg/best": 0.1, "probe_avg/best": 0.1}, "combination": list(combination), "best_pooling": "mean"}
    if bank:
        u["bank"] = dict(bank)
    return {**u, **extra}


def _bank(cos, top1, skew=0.1, kurt=0.5):
    return {"mean_cosine": cos, "svd_top1_share": top1, "abs_skew": skew, "excess_kurtosis": kurt}


def _claim(units, start):
    found = [c for c in claims(units) if c[0].startswith(start)]
    assert len(found) == 1, [c[0] for c in claims(units)]
    return found[0]


def test_table8_grid_uses_the_recorded_combination_of_plain_1st_a():
    units = {"base": _unit(60.0), "1st-a": _unit(62.0, ("mean", "amp")), "1st-a-mean-ac": _unit(61.0, ("mean", "ac")),
             "1st-a-cls-amp": _unit(63.0, ("cls", "amp")), "1st-a-cls-ac": _unit(63.5, ("cls", "ac")),
             "1st-c-cls-ac": _unit(70.0, ("cls", "ac"))}  # dictionary c: not Table 8's grid
    statement, measured, holds = _claim(units, "Table 8: AMP banks beat AC banks")
    assert "paper BERT-base cls +2.78 / mean +2.88" in statement
    assert measured == "(cls, amp) 63.00 vs (cls, ac) 63.50, (mean, amp) 62.00 vs (mean, ac) 61.00" and holds is False
    units["1st-a-cls-ac"] = _unit(62.5, ("cls", "ac"))
    assert _claim(units, "Table 8: AMP banks beat AC banks")[2] is True
    del units["1st-a-mean-ac"], units["1st-a-cls-ac"]  # no AC unit: no claim
    assert not [c for c in claims(units) if c[0].startswith("Table 8")]


def test_geometry_claims_need_both_isotropy_measures_to_fall():
    units = {"1st-a": _unit(62.0, bank=_bank(0.20, 0.30)), "2nd-a": _unit(63.0, bank=_bank(0.10, 0.15)),
             "3rd-a": _unit(63.5, bank=_bank(0.05, 0.16, skew=0.1, kurt=0.2)),
             "3rd-a-ica": _unit(63.0, bank=_bank(0.0, 0.01, skew=0.9, kurt=4.0))}
    statement, measured, holds = _claim(units, "Figures 1-2")
    assert measured == "1st bank 0.200 / 0.300, 2nd bank 0.100 / 0.150, 3rd bank 0.050 / 0.160" and holds is False
    units["3rd-a"]["bank"]["svd_top1_share"] = 0.12
    assert _claim(units, "Figures 1-2")[2] is True
    statement, measured, holds = _claim(units, "Appendix A, Figure 3")
    assert "(3rd step, a)" in statement and measured == "|skew| 0.90 vs 0.10, excess kurtosis 4.00 vs 0.20" and holds
    units["3rd-a-ica"]["bank"]["excess_kurtosis"] = 0.1  # skewed but lighter-tailed: does not hold
    assert _claim(units, "Appendix A, Figure 3")[2] is False


def test_untrained_pooler_reverse_dictionary_under_table2():
    rd = {"rd_acc@1": 0.5, "rd_acc@10": 2.0, "rd_acc@100": 9.25}
    base = {"metrics": {"sim_avg/best": 60.0}}  # one evaluation, no seeds
    units = {"base": base, "1st-c": _unit(62.0, rd_untrained=rd), "2nd-c": _unit(63.0, rd_untrained=None)}
    keys = [("sim_avg/best", "sim"), ("rd_acc@10", "RD acc@10")]
    text = table2(units, keys)
    base_row = next(line for line in text.splitlines() if line.startswith("| base |"))
    assert "| 60.00 | see below |" in base_row
    assert text.endswith("against each 1st step's bank, RD acc@1 / @10 / @100: 1st-c 0.50 / 2.00 / 9.25.")
