"""What the textbook chapter (Section 31.1a) states, its statements as claims checked per backbone, and where a run
departs from it.

The chapter prints no outputs and trains nothing at scale: its one number is the std of random unit-vector cosines
in 768 dimensions ("In 768-dim BERT, std dev ~ 0.036"). Every other number of the card is measured here, on the
offline data. Each claim quotes the chapter, the rule says when it holds here (with its margin and its
uncertainty: the core's two-level bootstrap over the section's queries, pairs or items and its seeds, noise.py),
and a claim whose section did not run is "not run". A claim that rests on a training declares its section
(rests_on): the core's gate makes it "inconclusive" when a training of that section's runs did not learn
(spherekit.experiments.api.learning.gate; the trainings are the runs' "training" records: "pooling <mode>",
"losses <loss>", "mining <chain> round <r>", "order verifier"). Rules that cannot fail on this data (the chapter's
code against the library, random vectors against 1/sqrt(d), the 0.7 rule on pairs whose positives average cosine
~0.4) are sanity checks. The checks are in checks.py.
"""

from __future__ import annotations

from ..api.claims import Claim
from ..api.learning import RULE
from ..api.printed import Printed
from . import checks as C
from .checks import STD_768

SECTION = "Section 31.1a"
LEARNED = f"; inconclusive when a training it rests on did not learn ({RULE})"
BOOT = ("two-level bootstrap over the seeds and the test queries (paired: every system of the section on the same "
        "queries and runs; a frozen measurement: the queries alone)")

PRINTED = [Printed(f"{SECTION}, concentration of measure", "concentration", STD_768, 0.036,
                   setting="random unit vectors, d = 768")]


CLAIMS = [
    Claim("listings-1", "paraphrase vs unrelated: 'A feline rested on the rug.' is closer to 'The cat sat on the "
          "mat.' than 'Stock prices rose sharply today.' is", f"{SECTION}, listing 1",
          "on a set: over the near-miss set's WordNet sentences that have a one-word synonym paraphrase (the "
          "closest paraphrases offline; the listing's pair shares no content word), the mean of cos(sentence, "
          "paraphrase) - cos(sentence, an unrelated sentence of the set) > 0, with a bootstrap over the sentences; "
          "the listing's own example is shown (a run that kept no per-item values is judged on the example alone, "
          "deterministic)", C.paraphrase),
    Claim("listings-2", "the MNRL function is 'the cross-entropy of a softmax over similarities': spherekit's fused "
          "MultipleNegativesRankingLoss gives the same value on the same embeddings", f"{SECTION}, listing 3",
          "holds when the largest |chapter - spherekit| is below 1e-5 (a unit test of our loss, not of the chapter)",
          C.mnrl_equality, sanity=True),
    Claim("listings-3", "mine_hard_negatives returns 'the top-k most similar non-positive corpus indices': labelled "
          "positives never returned, at most num_negatives per query", f"{SECTION}, listing 4",
          "holds when no positive is returned, no query gets more than num_negatives, and the listing returns what "
          "sentence-transformers' mine_hard_negatives returns (the listing drops positives by construction)",
          C.mining_listing, sanity=True),
    Claim("concentration-1", "'randomly drawn unit vectors have pairwise cosine similarities concentrating tightly "
          "around zero, std dev ~ 1/sqrt(d). In 768-dim BERT, std dev ~ 0.036'",
          f"{SECTION}, concentration of measure",
          "holds when the largest relative error |std * sqrt(d) - 1| is at most std_tolerance (0.05): a property of "
          "random Gaussian directions, true by construction", C.std, sanity=True),
    Claim("concentration-2", "'The similarity between a query and a completely irrelevant document may differ from "
          "the similarity to the most relevant document by only 0.1-0.3 units'",
          f"{SECTION}, concentration of measure",
          "holds when the median gap (relevant - a random irrelevant passage) lies in gap_range (0.1-0.3): "
          "|median - 0.2| within 0.1, with a two-level bootstrap over the test queries and the seeds (each seed draws "
          "its own irrelevant passages)", C.gap),
    Claim("pooling-1", "mean pooling 'tends to produce the most robust representations'; 'start with mean pooling'",
          f"{SECTION}, pooling", "holds when mean's R@10 is above both cls's and max's (frozen, and after "
          f"fine-tuning where it ran): the smallest lead > 0, {BOOT}" + LEARNED, C.mean_pooling,
          rests_on=("pooling",)),
    Claim("pooling-2", "max pooling 'can capture salient features but is less commonly used'", f"{SECTION}, pooling",
          "holds when max's R@10 is below mean's (frozen): max - mean < 0, with a bootstrap over the test queries",
          C.max_pooling),
    Claim("losses-1", "'triplet loss is less sample-efficient than MNRL because it uses only one negative per "
          "anchor'", f"{SECTION}, contrastive training",
          "holds when MNRL is above triplet on both R@10 after training and its mean over the training curve: the "
          f"smaller lead > 0, {BOOT}" + LEARNED, C.losses, rests_on=("losses",)),
    Claim("mining-1", "'Random negatives are typically too easy ... providing little learning signal'; hard "
          "negatives 'force the model to learn fine-grained distinctions'", f"{SECTION}, hard negatives",
          f"holds when the hard chain's R@10 ends above the random chain's (same rounds and steps): > 0, {BOOT}"
          + LEARNED, C.hard_vs_random, rests_on=("mining",)),
    Claim("mining-2", "'starting with BM25 negatives for initial training and then mining harder negatives with the "
          "trained model for further fine-tuning rounds'", f"{SECTION}, hard negatives",
          f"holds when the model-mined round's R@10 is above the BM25 round's: > 0, {BOOT}" + LEARNED,
          C.model_mined_round, rests_on=("mining",)),
    Claim("thresholds-1", "''use cosine similarity above 0.7' advice ... will quietly destroy your RAG system'",
          f"{SECTION}, similarity thresholds",
          f"holds when 0.7 loses more than {C.RULE_OF_THUMB_LOSS} F1 against the calibrated best on the term -> "
          "gloss pairs, whose positives average cosine ~0.4: it cannot fail there", C.rule_of_thumb, sanity=True),
    Claim("thresholds-2", "thresholds depend on the embedding model and corpus: 'Calibrate similarity thresholds "
          "empirically on YOUR embedding model and corpus'", f"{SECTION}, similarity thresholds",
          "holds when a best-F1 threshold calibrated on the other corpus (terms <-> example sentences) loses more "
          f"than {C.TRANSFER_LOSS} F1 on each corpus's held-out pairs against its own: the smaller loss > "
          f"{C.TRANSFER_LOSS}, with a bootstrap over the held-out queries of both corpora (different queries: "
          "resampled independently)", C.transfer),
    Claim("ann-1", "'approximate-nearest-neighbor algorithms can skip large fractions of the search space and still "
          "achieve 95%+ recall'", f"{SECTION}, approximate search",
          f"holds when the best recall@10 among the settings scanning under {C.MAX_SCANNED:.0%} of the corpus is "
          ">= 0.95, with a bootstrap over the queries", C.ann),
    Claim("order-1", "'the patient was treated by the doctor' and 'the doctor was treated by the patient' 'may embed "
          "similarly despite having opposite meanings'", f"{SECTION}, word order",
          f"on a set: the mean cosine of a sentence and its subject-object swap > {C.ROLE_SWAP_COSINE}, over the "
          "near-miss set's swaps of WordNet sentences (both parts: the backbone is frozen) and the chapter's three "
          "pairs, with a bootstrap over the pairs; the chapter's pair is shown (a run that kept no per-item values "
          "is judged on that pair alone, deterministic)", C.role_swap),
    Claim("order-2", "'retrieval based on embeddings should be followed by a re-ranking or verification step'",
          f"{SECTION}, word order",
          "holds when the verifier re-rank puts the right passage first more often than pooled cosine over the "
          "held-out near-misses and the chapter's role swaps: re-rank - cosine > 0, a two-level bootstrap over the "
          "verifier's seeds and those items" + LEARNED, C.rerank, rests_on=("order",)),
]


def departures(results: dict) -> list[str]:
    """Where the run departs from the chapter (beyond the configuration table's marked values), and every choice
    the chapter does not make that decides a verdict."""
    cfg = results.get("config") or {}
    queries = cfg.get("mining_queries", "terms")
    margin = cfg.get("mining_margin", 0.0)
    mining_data = (
        "WordNet example sentences (the first example of a synset, headword kept: a usage) retrieving their "
        "synset's gloss, one query per synset; synsets sharing a lemma or gloss with a held-out one leave training"
        if queries == "examples" else
        "masked terms retrieving their glosses (a one-word query: BM25 matches few glosses, so most BM25 "
        "negatives are random top-ups, and model-mined negatives are often near-synonyms' glosses)")
    full = (["missing for a full reproduction: BAAI/bge-m3 for listing 2 and a cross-encoder for the chapter's "
             "third mining source (neither is packaged here); the chapter names no data set, so no data is missing"]
            if results.get("preset") == "paper" else [])
    return full + [
        "data: the chapter names no data set; every measurement is on offline WordNet data (a held-out term "
        "retrieves its glosses, headwords masked; the ANN corpus is WordNet glosses)",
        "listing 2 (BAAI/bge-m3 on CUDA) is not run: the model is not available offline",
        "hard-negative mining: BM25, model-mined and random negatives; the chapter's cross-encoder source is left out",
        f"mining queries (ours; the chapter's example queries are questions over passages): {mining_data}",
        "mining, model-mined rounds: " + (
            f"a false-negative margin (sentence-transformers' relative_margin {margin:g}: a candidate is a negative "
            f"only when cos(query, it) <= {1 - margin:g} cos(query, positive)); the chapter's listing has none"
            if margin else "no false-negative margin (the listing's rule: every non-positive among the top_k)")
        + "; BM25 candidates (bm25s, English stopwords, score > 0, top_k) get no margin",
        "mining, top-up rule (ours): a query with fewer than num_negatives candidates (BM25 matched too few "
        "passages, or the margin removed them) is filled with random non-positives; the card counts them",
        "mining rounds (ours): round 2 continues training the round-1 model on the same pairs with the new "
        "negatives, for the same steps; the random chain (fresh random negatives every round) is the control; "
        + ("each round draws its own batch order" if cfg.get("reshuffle_rounds", False) else
           "every round replays round 1's batch order (same rows, new negatives)"),
        "pooling: CLS and max pooling are read from all-MiniLM-L6-v2 / all-mpnet-base-v2, which were trained with "
        "mean pooling: the frozen comparison favours mean by construction of the backbones",
        "losses: every loss trains on the same (term, gloss, one random negative) rows; triplet with euclidean "
        "distance and margin triplet_margin; cosine-similarity loss on (term, gloss, 1) and (term, negative, 0)",
        "concentration-2: 'a completely irrelevant document' is a random non-relevant gloss of the test corpus, "
        "'the most relevant' the query's best relevant gloss; the rule reads the median gap over queries",
        "thresholds: labelled pairs per query (its gloss, its best BM25 non-relevant gloss, a random one), "
        "calibrated by best F1 on a calibration part (calibration_share of the queries); the second corpus "
        "(example sentences) is ours",
        f"approximate search: recall@k against the exact top-k (not relevance); 'large fractions' skipped means "
        f"under {C.MAX_SCANNED:.0%} of the corpus scanned (faiss' counters)",
        "order sensitivity: the verifier (a small CNN over the token similarity map, trained on structural "
        "near-misses) is ours; the chapter names no re-ranker; the same-meaning passages of the chapter's pair "
        "and the two other role swaps are ours",
        "single examples measured on sets (ours): listing 1's 'paraphrase vs unrelated' over WordNet sentences and "
        "a one-word synonym paraphrase of each (milder paraphrases than the listing's, which shares no content "
        "word), the role swap's 'may embed similarly' over subject-object swaps of WordNet sentences (spaCy "
        "parses, the near-miss set); the chapter's own examples are shown beside them",
        f"uncertainty (ours): 95% percentile intervals of the two-level bootstrap over the evaluation items and "
        f"the {len(cfg.get('seeds') or [0])} seed(s) (the frozen sections' values are the same at every seed: "
        f"items only; the thresholds' two corpora are resampled independently); a claim resting on a section whose "
        f"training did not learn is inconclusive ({RULE})",
    ]


__all__ = ["CLAIMS", "PRINTED", "departures"]
