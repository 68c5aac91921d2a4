"""The inputs of the chapter's (Section 31.1a "words -> sentences, bi-encoders, pooling, contrastive training,
hard negatives") listings and of its order-sensitivity example. Its statements, quoted, are the claims of
paper.py."""

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
    ("the patient was treated by the doctor", "the doctor treated the patient",
     "the doctor was treated by the patient"),
    ("the dog bit the man", "the man was bitten by the dog", "the man bit the dog"),
    ("the teacher praised the student", "the student was praised by the teacher", "the student praised the teacher"),
)

