"""The printed numbers of DefSent+ (Liu 2024, arXiv:2405.16153) that the card puts next to ours.

Table 2's and Table 8's row labels are scrambled in the extraction; the (pooling, bank) of each row is the one
Table 8 and the text give (BERT: (CLS, AMP); RoBERTa: (Mean, AC) on dictionary a). Averages are the mean of the
seven STS sets (Spearman x 100), mean +- std over 10 seeds unless noted.
"""

from __future__ import annotations

CITATION = """
@article{liu2024defsentplus,
  title={DefSent+: Improving sentence embeddings of language models by projecting definition sentences into a
         quasi-isotropic or isotropic vector space of unlimited dictionary entries},
  author={Liu, Xiaodong},
  journal={arXiv preprint arXiv:2405.16153},
  year={2024}
}
"""

ENCODERS = ("BERT-base", "BERT-large", "RoBERTa-base", "RoBERTa-large")

# Table 1: (definitions, entries, max tokens (BERT), median tokens)
TABLE1 = {"a": (331_472, 150_518, 138, 12), "b": (122_209, 36_767, 108, 12), "c": (67_553, 9_647, 85, 12)}

# Table 2: STS average (mean, std) per encoder and PST condition; DefSent baselines for comparison
TABLE2 = {
    "DefSent": {"BERT-base": (75.11, 0.21), "BERT-large": (75.65, 0.53), "RoBERTa-base": (75.62, 0.38),
                "RoBERTa-large": (74.19, 0.88)},
    "1st-c": {"BERT-base": (75.36, 0.22), "BERT-large": (77.22, 0.27), "RoBERTa-base": (75.92, 0.19),
              "RoBERTa-large": (77.39, 0.56)},
    "1st-b": {"BERT-base": (76.61, 0.38), "BERT-large": (78.74, 0.39), "RoBERTa-base": (77.21, 0.11),
              "RoBERTa-large": (79.00, 0.18)},
    "1st-a": {"BERT-base": (77.88, 0.22), "BERT-large": (79.40, 0.72), "RoBERTa-base": (78.44, 0.14),
              "RoBERTa-large": (79.81, 0.19)},
    "2nd-a": {"BERT-base": (78.40, 0.23), "BERT-large": (78.83, 0.33), "RoBERTa-base": (78.85, 0.25),
              "RoBERTa-large": (79.96, 0.31)},
    "3rd-a": {"BERT-base": (78.42, 0.16), "BERT-large": (79.78, 0.22), "RoBERTa-base": (79.04, 0.12),
              "RoBERTa-large": (80.22, 0.21)},
    "3rd-a-ica": {"BERT-base": (78.65, 0.15), "BERT-large": (80.00, 0.17), "RoBERTa-base": (78.54, 0.20),
                  "RoBERTa-large": (80.05, 0.16)},
}
# in the text (sec. 4.1): ICA on the 2nd-step bank, BERT-base 78.45, BERT-large 79.42
TEXT_2ND_ICA = {"BERT-base": 78.45, "BERT-large": 79.42}

# Table 8: 1st Training on a, STS average per (pooling, bank)
TABLE8 = {
    "BERT-base": {("mean", "amp"): 77.50, ("cls", "amp"): 77.88, ("mean", "ac"): 74.62, ("cls", "ac"): 75.10},
    "BERT-large": {("mean", "amp"): 78.16, ("cls", "amp"): 79.40, ("mean", "ac"): 75.27, ("cls", "ac"): 76.54},
    "RoBERTa-base": {("mean", "amp"): 76.68, ("cls", "amp"): 76.78, ("mean", "ac"): 78.44, ("cls", "ac"): 77.66},
    "RoBERTa-large": {("mean", "amp"): 76.97, ("cls", "amp"): 79.39, ("mean", "ac"): 79.81, ("cls", "ac"): 79.49},
}

# Table 3 (best of 10): further training a sentence-trained (data-augmented) encoder, base -> DefSent+ STS average
TABLE3 = {
    "SimCSE BERT-base 1st": (76.25, 79.76), "SimCSE BERT-large 1st": (78.71, 81.05),
    "SimCSE RoBERTa-base 1st": (77.11, 80.00), "SimCSE RoBERTa-large 2nd": (78.90, 82.21),
    "SNCSE BERT-base 1st": (78.97, 80.47), "SNCSE BERT-large 1st": (80.19, 81.52),
    "SNCSE RoBERTa-base 1st": (79.23, 80.28), "SNCSE RoBERTa-large 2nd": (81.77, 82.17),
    "SynCSE-partial RoBERTa-base 1st": (81.23, 82.20), "SynCSE-partial RoBERTa-large 2nd": (82.70, 83.82),
}

# Table 7: pooling chosen at evaluation, STS: Prompt for 11 of the 14 released encoders
TABLE7_PROMPT_STS = (11, 14)
# Table 4: transfer (SentEval average) DefSent+ minus its starting point / DefSent: -0.48 .. +2.01
TABLE4_DELTA_RANGE = (-0.48, 2.01)
