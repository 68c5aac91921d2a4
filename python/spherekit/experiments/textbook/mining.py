"""Hard-negative mining (the chapter's three sources, less the cross-encoder) and the mining rounds.

Every miner maps (model, retrieval set, cfg, rng) -> one list of corpus ids per query: at most
cfg.num_negatives ids, never a labelled positive of that query, taken from the cfg.top_k best candidates.

    bm25_negatives    the top BM25 results (bm25s) that are not labelled positives
    model_negatives   sentence-transformers' mine_hard_negatives with the given model (cosine, "top" strategy),
                      with cfg.mining_margin as its relative_margin (0: none, the listing's rule)
    random_negatives  uniformly drawn non-positives (the baseline)

A query with fewer than num_negatives candidates (BM25 matched too few passages, say) is topped up with random
non-positives; the miners return how many were topped up.

mining_rounds: round 1 trains on the first miner's negatives, round r > 1 on negatives mined by the model that
round r - 1 trained (the chapter's "BM25 negatives for initial training and then mining harder negatives with
the trained model for further fine-tuning rounds").
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path


def _top_up(negatives: list[int], positives: set[int], n_corpus: int, want: int, rng: random.Random) -> int:
    """Append random non-positive, not yet chosen ids until `want`; returns how many were added."""
    if len(negatives) >= want:
        return 0
    taken = set(negatives)
    pool = [i for i in range(n_corpus) if i not in positives and i not in taken]
    extra = rng.sample(pool, min(want - len(negatives), len(pool)))
    negatives.extend(extra)
    return len(extra)


def _negatives_from(candidates, data, cfg, rng: random.Random) -> tuple[list[list[int]], int]:
    """Per query: its candidates (best first) minus its labelled positives, the first num_negatives, topped up
    with random non-positives; and how many were topped up in all."""
    out, added = [], 0
    for cands, rel in zip(candidates, data.relevant):
        negs = [i for i in cands if i not in rel][:cfg.num_negatives]
        added += _top_up(negs, rel, len(data.corpus), cfg.num_negatives, rng)
        out.append(negs)
    return out, added


def random_negatives(model, data, cfg, rng: random.Random) -> tuple[list[list[int]], int]:
    return _negatives_from([[] for _ in data.relevant], data, cfg, rng)


def bm25_negatives(model, data, cfg, rng: random.Random) -> tuple[list[list[int]], int]:
    """The top_k BM25 passages (score > 0) of each query minus its labelled positives, first num_negatives."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(data.corpus, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(data.queries, stopwords="en", show_progress=False)
    k = min(cfg.top_k, len(data.corpus))
    ids, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    matched = [[int(i) for i, s in zip(row, srow) if s > 0] for row, srow in zip(ids, scores)]
    return _negatives_from(matched, data, cfg, rng)


def model_negatives(model, data, cfg, rng: random.Random) -> tuple[list[list[int]], int]:
    """sentence-transformers' mine_hard_negatives: for each query the num_negatives most similar passages among
    its top candidates that are not labelled positives (every (query, positive) pair is a row, so a query's
    positives are all excluded). With cfg.mining_margin = m > 0 a candidate is kept only when cos(query, it) <=
    cos(query, positive) - m |cos(query, positive)| (the library's relative_margin; with several positives, the
    least similar one decides): a passage nearly as close as the positive is likely an unlabelled positive (a
    near-synonym's gloss), not a negative ("NV-Retriever: Improving text embedding models with effective
    hard-negative mining", TopK-PercPos)."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    rows = [(q, data.corpus[i]) for q, rel in zip(data.queries, data.relevant) for i in sorted(rel)]
    dataset = Dataset.from_dict({"anchor": [a for a, _ in rows], "positive": [p for _, p in rows]})
    was_training = model.training
    model.eval()
    try:
        margin = cfg.mining_margin or None
        mined = mine_hard_negatives(dataset, model, corpus=list(data.corpus), range_max=cfg.top_k,
                                    relative_margin=margin, num_negatives=cfg.num_negatives, sampling_strategy="top",
                                    output_format="labeled-list", batch_size=cfg.eval_batch_size, verbose=False)
    finally:
        model.train(was_training)
    position = {text: i for i, text in enumerate(data.corpus)}
    found: dict[str, list[int]] = {}
    for row in mined:
        texts = [t for t, label in zip(row["positive"], row["labels"]) if not label]  # best first
        found.setdefault(row["anchor"], [position[t] for t in texts])
    return _negatives_from([found.get(q, []) for q in data.queries], data, cfg, rng)


MINERS = {"bm25": bm25_negatives, "model": model_negatives, "random": random_negatives}


def training_rows(data, negatives: list[list[int]], n: int) -> dict[str, list[str]]:
    """Dataset columns anchor, positive, negative_1..negative_n: one row per (query, labelled positive)."""
    cols: dict[str, list[str]] = {"anchor": [], "positive": [], **{f"negative_{j + 1}": [] for j in range(n)}}
    for q, rel, negs in zip(data.queries, data.relevant, negatives):
        negs = (negs * n)[:n] if negs else []
        if len(negs) < n:
            continue
        for pos in sorted(rel):
            cols["anchor"].append(q)
            cols["positive"].append(data.corpus[pos])
            for j, neg in enumerate(negs):
                cols[f"negative_{j + 1}"].append(data.corpus[neg])
    return cols


def mining_rounds(model, data, cfg, miners, train_round, evaluate, *, seed: int, rounds_dir=None,
                  load_model=None) -> list[dict]:
    """Rounds of (mine with the current model, train on the negatives, evaluate). miners: one miner name per
    round (the last repeats); train_round(model, columns, round) -> (the trained model, its training record);
    evaluate(model) -> metrics; seed: of the random negatives and top-ups. Returns one record per round: miner,
    metrics, training, topped-up count (of negatives_drawn), overlap with the previous round's negatives, and the
    negatives.

    With rounds_dir, every finished round is kept (rounds_dir/round<r>/record.json, with the random state, and
    the trained model in rounds_dir/round<r>/model until the next round has finished) and a rerun resumes after
    the last finished round, reloading its model with load_model(folder): an interrupted chain redoes at most
    one round. The last round keeps no model, so a finished chain leaves none."""
    rng = random.Random(seed)
    folders = [Path(rounds_dir) / f"round{r + 1}" for r in range(cfg.rounds)] if rounds_dir is not None else []
    done = _resume_point(folders)
    records, previous = [], None
    for r in range(cfg.rounds):
        if r < done:
            saved = json.loads((folders[r] / "record.json").read_text(encoding="utf-8"))
            version, internal, gauss = saved["random_state"]
            rng.setstate((version, tuple(internal), gauss))
            if r + 1 == done < cfg.rounds:
                model = load_model(folders[r] / "model")
            records.append(saved["record"])
            previous = saved["record"]["negatives"]
            continue
        name = miners[min(r, len(miners) - 1)]
        negatives, added = MINERS[name](model, data, cfg, rng)
        overlap = None
        if previous is not None:
            same = sum(len(set(a) & set(b)) for a, b in zip(negatives, previous))
            overlap = round(same / max(sum(map(len, negatives)), 1), 4)
        model, training = train_round(model, training_rows(data, negatives, cfg.train_negatives), r)
        records.append({"round": r + 1, "miner": name, "topped_up": added,
                        "negatives_drawn": sum(map(len, negatives)), "overlap_with_previous": overlap,
                        "metrics": evaluate(model), "training": training, "negatives": negatives})
        previous = negatives
        if folders:
            _keep_round(folders[r], records[-1], rng.getstate(), model if r + 1 < cfg.rounds else None)
    return records


def _keep_round(folder: Path, record: dict, state, model) -> None:
    """Save a finished round: its model first (when a later round needs it), then its record (which marks it
    finished); the previous round's model is no longer needed."""
    from ..._atomic import atomic_dir
    from ..api.files import write_json

    if model is not None:
        with atomic_dir(folder / "model") as tmp:
            model.save(str(tmp))
    write_json(folder / "record.json", {"record": record, "random_state": [state[0], list(state[1]), state[2]]})
    previous = folder.with_name(f"round{record['round'] - 1}") / "model"
    shutil.rmtree(previous, ignore_errors=True)


def _resume_point(folders: list[Path]) -> int:
    """How many rounds a rerun skips: the finished rounds in a row from the first, when the model of the last of
    them is still there for the next round (else the chain starts again)."""
    done = 0
    while done < len(folders) and (folders[done] / "record.json").is_file():
        done += 1
    if 0 < done < len(folders) and not (folders[done - 1] / "model").is_dir():
        return 0
    return done
