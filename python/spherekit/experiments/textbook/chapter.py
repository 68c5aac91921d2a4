"""What the chapter (Section 31.1a "words -> sentences, bi-encoders, pooling, contrastive training,
hard negatives") prints or states: its listings' inputs and its checkable statements, quoted."""

from __future__ import annotations

CITATION = """@incollection{textbook_31_1a,
  title = {Section 31.1a: From Words to Sentences; Bi-Encoders, Pooling, Contrastive Training and Hard Negatives},
  note = {Textbook chapter on sentence embeddings; no outputs printed}
}"""

# listing 1: paraphrase vs unrelated
SENTENCES = ("The cat sat on the mat.", "A feline rested on the rug.", "Stock prices rose sharply today.")

# listing 4: hard-negative mining example
QUERIES = ("What causes diabetes?", "How does photosynthesis work?")
CORPUS = (
    "Diabetes is caused by insulin resistance or insufficient insulin production.",
    "Type 2 diabetes risk factors include obesity and sedentary lifestyle.",
    "Photosynthesis converts sunlight into chemical energy in plants.",
    "The Calvin cycle fixes carbon dioxide into glucose molecules.",
    "Machine learning models require large datasets for training.",
)
POSITIVES = {0: {0, 1}, 1: {2, 3}}

# the order-sensitivity example: the chapter's pair, plus (our choice) an active-voice paraphrase as the
# passage that should rank first, and two more role swaps of the same kind
ORDER_EXAMPLES = (
    ("the patient was treated by the doctor", "the doctor treated the patient", "the doctor was treated by the patient"),
    ("the dog bit the man", "the man was bitten by the dog", "the man bit the dog"),
    ("the teacher praised the student", "the student was praised by the teacher", "the student praised the teacher"),
)

# the chapter's statements, keyed by the section that measures them
STATEMENTS = {
    "listings": [
        "paraphrase vs unrelated: 'A feline rested on the rug.' is closer to 'The cat sat on the mat.' than "
        "'Stock prices rose sharply today.' is (listing 1)",
        "the MNRL function is 'the cross-entropy of a softmax over similarities' (listing 3): spherekit's fused "
        "MultipleNegativesRankingLoss gives the same value on the same embeddings",
        "mine_hard_negatives returns 'the top-k most similar non-positive corpus indices' (listing 4): labelled "
        "positives never returned, at most num_negatives per query",
    ],
    "concentration": [
        "'randomly drawn unit vectors have pairwise cosine similarities concentrating tightly around zero, std dev "
        "~ 1/sqrt(d). In 768-dim BERT, std dev ~ 0.036'",
        "'The similarity between a query and a completely irrelevant document may differ from the similarity to "
        "the most relevant document by only 0.1-0.3 units'",
    ],
    "pooling": [
        "mean pooling 'tends to produce the most robust representations'; 'start with mean pooling'",
        "max pooling 'can capture salient features but is less commonly used'",
    ],
    "losses": [
        "'triplet loss is less sample-efficient than MNRL because it uses only one negative per anchor'",
    ],
    "mining": [
        "'Random negatives are typically too easy ... providing little learning signal'; hard negatives 'force the "
        "model to learn fine-grained distinctions'",
        "'starting with BM25 negatives for initial training and then mining harder negatives with the trained "
        "model for further fine-tuning rounds'",
    ],
    "thresholds": [
        "''use cosine similarity above 0.7' advice ... will quietly destroy your RAG system': thresholds depend "
        "on the embedding model; 'Calibrate similarity thresholds empirically on YOUR embedding model and corpus'",
    ],
    "ann": [
        "'approximate-nearest-neighbor algorithms can skip large fractions of the search space and still achieve "
        "95%+ recall'",
    ],
    "order": [
        "'the patient was treated by the doctor' and 'the doctor was treated by the patient' 'may embed similarly "
        "despite having opposite meanings'",
        "'retrieval based on embeddings should be followed by a re-ranking or verification step'",
    ],
}
