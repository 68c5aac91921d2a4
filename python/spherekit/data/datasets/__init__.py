"""Loaders for published evaluation and training datasets, each reading the dataset's own file format
(tested on small local files in that format; nothing is downloaded). A malformed file raises
DatasetFormatError naming the file, the line and the field.

    sts.load_sts(folder, year)            STS12-16 (SentEval)         -> {subset: [STSPair]}
    stsb.load_stsb(path)                  STS Benchmark (SentEval)    -> [STSPair]
    sick.load_sick(path)                  SICK-R (SentEval)           -> [STSPair]
    beir.load_beir(folder) / load_nanobeir(root)   BEIR / NanoBEIR    -> BeirData
    nq.load_nq_triplets(path)             NQ (anchor, positive, negative) triplets
    np_paraphrase.load_np_paraphrase(path)   the NP paraphrase suite (five modifier families) of "Principles of
                                             Concept Representation in Sentence Encoders" (arXiv:2606.06994)
    dbpedia_gap.load_dbpedia_gap(path)    "Principles of Concept Representation"'s DBpedia semantic-gap benchmark
    emolit.load_emolit(path), goemotions.load_goemotions(path) / load_goemotions_raw(path),
    empathetic_dialogues.load_empathetic_dialogues(path), superemotion.load_superemotion(path)
                                          emotion datasets             -> [EmotionExample]
"""

from __future__ import annotations

from ._io import DatasetFormatError
from ._records import EmotionExample

__all__ = ["DatasetFormatError", "EmotionExample"]
