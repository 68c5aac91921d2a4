"""The chapter's statements (chapter.STATEMENTS) checked against one unit's metrics: for each, what was measured
and whether it holds (True / False; None when the unit lacks the numbers). The rules are stated in the text."""

from __future__ import annotations

from .chapter import STATEMENTS


def _f(x, nd=3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def listings(m, d, cfg):
    mining_ok = m["mining_positives_returned"] == 0 and all(len(v) <= cfg["num_negatives"]
                                                           for v in d["chapter_negatives"].values())
    return [
        (f"cos(paraphrase) {_f(m['sim_paraphrase'], 4)} vs cos(unrelated) <= {_f(m['sim_unrelated'], 4)}",
         m["sim_paraphrase"] > m["sim_unrelated"]),
        (f"largest |chapter - spherekit| over the random and the real batch: {m['mnrl_max_abs_diff']:.2e} "
         f"(random example loss {_f(m['mnrl_random_example'], 4)}); holds below 1e-5",
         m["mnrl_max_abs_diff"] < 1e-5),
        (f"listing 4 negatives {d['chapter_negatives']}; positives returned: {m['mining_positives_returned']}; "
         f"same as sentence-transformers' mine_hard_negatives: {m['mining_same_as_sentence_transformers']}",
         mining_ok and m["mining_same_as_sentence_transformers"]),
    ]


def concentration(m, d, cfg):
    lo, hi = cfg["gap_range"]
    return [
        (f"std at d=768: {_f(m['random_std_768'], 4)} (1/sqrt(768) = 0.0361); largest relative error over d = "
         f"{[r['d'] for r in d['random']]}: {_f(m['max_relative_error'], 4)} (holds below {cfg['std_tolerance']}). "
         f"The backbone is far from isotropic: random passage pairs have mean cosine {_f(m['model_cos_mean'])} "
         f"and std {_f(m['model_cos_std'])} (isotropic: 0 and {_f(m['isotropic_std'])})",
         m["max_relative_error"] <= cfg["std_tolerance"]),
        (f"median gap relevant - random irrelevant passage: {_f(m['gap_random_median'])} ({_f(100 * m['gap_random_in_range'], 0)}% "
         f"of queries within {lo}-{hi}); relevant - hardest irrelevant: {_f(m['gap_hardest_median'])}; holds when "
         f"the median gap lies in {lo}-{hi}", lo <= m["gap_random_median"] <= hi),
    ]


def pooling(m, d, cfg):
    k = cfg["eval_k"]
    frozen = {p: m[f"frozen_{p}_recall@{k}"] for p in ("cls", "mean", "max")}
    trained = {p: m.get(f"trained_{p}_recall@{k}") for p in ("cls", "mean", "max")}
    text = "frozen recall@%d: %s" % (k, ", ".join(f"{p} {_f(v)}" for p, v in frozen.items()))
    if all(v is not None for v in trained.values()):
        text += "; after fine-tuning: " + ", ".join(f"{p} {_f(v)}" for p, v in trained.items())
    mean_best = frozen["mean"] >= max(frozen.values()) and (
        trained["mean"] is None or trained["mean"] >= max(v for v in trained.values() if v is not None))
    return [(text + "; holds when mean is best", mean_best),
            (text + "; holds when max is below mean", frozen["max"] < frozen["mean"])]


def losses(m, d, cfg):
    key = f"recall@{cfg['eval_k']}"
    fin = {x: m[f"{x}_{key}"] for x in ("mnrl", "triplet", "cosine")}
    area = {x: m[f"{x}_{key}_curve_mean"] for x in ("mnrl", "triplet", "cosine")}
    return [(f"{key} after {cfg['steps']} steps (start {_f(m[f'start_{key}'])}): "
             + ", ".join(f"{x} {_f(v)}" for x, v in fin.items())
             + "; mean over the training curve: " + ", ".join(f"{x} {_f(v)}" for x, v in area.items())
             + "; holds when MNRL is above triplet on both", fin["mnrl"] > fin["triplet"] and area["mnrl"] > area["triplet"])]


def mining(m, d, cfg):
    key = f"recall@{cfg['eval_k']}"
    rounds = range(1, cfg["rounds"] + 1)
    hard = [m[f"hard_round{r}_{key}"] for r in rounds]
    rand = [m[f"random_round{r}_{key}"] for r in rounds]
    text = (f"{key} from {_f(m[f'start_{key}'])}: hard (BM25, then model-mined) " + " -> ".join(map(_f, hard))
            + "; random " + " -> ".join(map(_f, rand)))
    return [(text + "; holds when hard negatives end above random", hard[-1] > rand[-1]),
            (text + "; holds when the model-mined round improves on the BM25 round",
             len(hard) > 1 and hard[-1] > hard[0])]


def thresholds(m, d, cfg):
    t = m["calibrated_threshold"]
    reach = (f"no threshold reaches precision {cfg['target_precision']}" if t is None else
             f"threshold for precision {cfg['target_precision']}: {_f(t)} (recall {_f(m['calibrated_recall'])})")
    text = (f"{reach}; "
            f"best-F1 threshold {_f(m['best_f1_threshold'])} (F1 {_f(m['best_f1'])}); at {cfg['rule_of_thumb']}: "
            f"precision {_f(m['rule_precision'])}, recall {_f(m['rule_recall'])}, F1 {_f(m['rule_f1'])}; holds when "
            "0.7 loses more than 0.05 F1 against the calibrated best")
    return [(text, m["best_f1"] - m["rule_f1"] > 0.05)]


def ann(m, d, cfg):
    parts = []
    for x in ("ivf", "hnsw"):
        p = m[f"{x}_param_at_target"]
        parts.append(f"{x}: max recall@{d['k']} {_f(m[f'{x}_max_recall'])}" + (
            "" if p is None else f", {cfg['target_recall']:.0%} at {'nprobe' if x == 'ivf' else 'efSearch'} {p} "
            f"(speed-up {m[f'{x}_speedup_at_target']}x, {_f(100 * m[f'{x}_scanned_at_target'], 1)}% of the corpus scanned)"))
    ok = any(m[f"{x}_scanned_at_target"] is not None and m[f"{x}_scanned_at_target"] < 0.5 for x in ("ivf", "hnsw"))
    return [("; ".join(parts) + f" (corpus {m['corpus']}); holds when one reaches the target recall scanning under half "
             "the corpus", ok)]


def order(m, d, cfg):
    return [
        (f"cos = {_f(m['chapter_cos_role_swap'], 4)} for the chapter's pair (same-meaning passage "
         f"{_f(m['chapter_cos_same_meaning'], 4)}); holds when above 0.9", m["chapter_cos_role_swap"] > 0.9),
        (f"same-meaning passage first: pooled cosine {m['examples_stage1_correct']}/{m['n_examples']} examples, verifier "
         f"re-rank {m['examples_stage2_correct']}/{m['n_examples']}; held-out near-misses ranked right: cosine "
         f"{_f(m['nearmiss_cosine_accuracy'])}, verifier {_f(m['nearmiss_verifier_accuracy'])}; holds when the "
         "re-rank beats pooled cosine on both",
         m["examples_stage2_correct"] > m["examples_stage1_correct"]
         and m["nearmiss_verifier_accuracy"] > m["nearmiss_cosine_accuracy"]),
    ]


CHECKS = {"listings": listings, "concentration": concentration, "pooling": pooling, "losses": losses,
          "mining": mining, "thresholds": thresholds, "ann": ann, "order": order}


def check(section: str, unit: dict, cfg: dict) -> list[tuple[str, str, bool | None]]:
    """[(statement, measured, holds)] of one unit."""
    try:
        rows = CHECKS[section](unit["metrics"], unit.get("details", {}), cfg)
    except (KeyError, TypeError):
        return [(s, "not measured", None) for s in STATEMENTS[section]]
    return [(s, text, holds) for s, (text, holds) in zip(STATEMENTS[section], rows)]
