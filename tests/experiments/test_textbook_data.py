"""The textbook's example-sentence set (multi-word queries for the mining section and the thresholds' second
corpus) on a hand-made WordNet: one query per held-out synset (its first example), its gloss the relevant
passage; synsets that share a lemma or a gloss with a held-out one never reach training or the distractors."""

import dataclasses
import types

from spherekit.experiments.textbook.data import _examples
from spherekit.experiments.textbook.spec import EXPERIMENT

SYNSETS = {  # synset: (lemmas, gloss, examples)
    "bank.n.01": (["bank"], "sloping land beside a body of water", ["they pulled the canoe up on the bank",
                                                                    "he sat on the bank of the river"]),
    "bank.n.02": (["bank", "depository"], "a financial institution", ["he cashed a check at the bank"]),
    "depository.n.01": (["depository"], "a facility where things can be deposited", ["the depository was full"]),
    "shore.n.01": (["shore"], "sloping land beside a body of water", ["the waves hit the shore"]),
    "run.v.01": (["run"], "move fast by using one's feet", ["Don't run--you'll be out of breath"]),
    "walk.v.01": (["walk"], "use one's feet to advance", ["we walked to the store"]),
    "talk.v.01": (["talk"], "exchange thoughts", ["we often talk business"]),
    "sing.v.01": (["sing"], "produce tones with the voice", ["She was singing while she was cooking"]),
}


class FakeWordNet:
    def example_sentences(self):
        return [(s, e) for s, (_, _, examples) in sorted(SYNSETS.items()) for e in examples]

    def concept(self, synset):
        lemmas, gloss, examples = SYNSETS[synset]
        return types.SimpleNamespace(lemmas=lemmas, definition=gloss, examples=examples)


def test_example_set_is_one_query_per_held_out_synset_and_decontaminated():
    cfg = dataclasses.replace(EXPERIMENT.make_config("tiny"), n_example_synsets=2, n_train_pairs=2, n_distractors=10)
    for seed in range(6):
        out = _examples(FakeWordNet(), dataclasses.replace(cfg, data_seed=seed))
        test = out["example_test_pairs"]
        assert len(test) == 2
        firsts = {SYNSETS[s][2][0]: s for s in SYNSETS}
        held = [firsts[q] for q, _ in test]
        assert all(g == SYNSETS[s][1] for (_, g), s in zip(test, held))
        held_lemmas = {x for s in held for x in SYNSETS[s][0]}
        held_glosses = {SYNSETS[s][1] for s in held}
        later = out["example_train_pairs"] + [(None, g) for g in out["example_distractors"]]
        used = [firsts[q] if q else next(s for s in SYNSETS if SYNSETS[s][1] == g and s not in held) for q, g in later]
        assert not {x for s in used for x in SYNSETS[s][0]} & held_lemmas
        assert not {g for _, g in later} & held_glosses
        assert len(out["example_train_pairs"]) <= 2 and all(q in firsts for q, _ in out["example_train_pairs"])
