"""Building the WordNet record columns from nltk's reader (cached by spherekit.data.wordnet; a change to
this file or to ontology.py invalidates that cache).

Rule: the columns depend on the database only. nltk keeps a synset's pointers in sets, whose iteration
order follows the string hash (PYTHONHASHSEED), so every list read from them is sorted (hypernyms by
name; a lemma's antonyms by synset and lemma) and the exception lists are stored as sorted tuples; what
has an order in WordNet itself (synsets, lemmas, examples) keeps it."""

from __future__ import annotations

from collections import defaultdict

from .ontology import all_onto_types

COARSE_POS = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r"}
_SS_TYPE = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}  # sense-key ss_type -> data file


def _sense_counts(reader) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = defaultdict(int)
    with reader.open("index.sense") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            ss_type = parts[0].split("%", 1)[1][0]
            counts[(_SS_TYPE[ss_type], int(parts[1]))] += int(parts[3])
    return counts


def _lemma_key(lemma) -> tuple[str, str]:
    return lemma.synset().name(), lemma.name()


def build_columns(reader) -> dict:
    """Every synset as plain columns (picklable, fast to load)."""
    counts = _sense_counts(reader)
    cols = {k: [] for k in ("synset_id", "pos", "lemmas", "definition", "examples", "lexname", "antonyms",
                            "sense_count", "hypernyms", "offset")}
    for s in reader.all_synsets():
        pos = s.pos()
        cols["synset_id"].append(s.name())
        cols["pos"].append(COARSE_POS[pos])
        lemmas = s.lemmas()
        cols["lemmas"].append([lem.name().replace("_", " ") for lem in lemmas])
        cols["definition"].append(s.definition())
        cols["examples"].append(list(s.examples()))
        cols["lexname"].append(s.lexname())
        cols["antonyms"].append([(lem.name().replace("_", " "), a.name().replace("_", " "), a.synset().name())
                                 for lem in lemmas for a in sorted(lem.antonyms(), key=_lemma_key)])
        cols["sense_count"].append(counts.get(("a" if pos == "s" else pos, s.offset()), 0))
        cols["hypernyms"].append(sorted(h.name() for h in s.hypernyms() + s.instance_hypernyms()))
        cols["offset"].append(s.offset())
    hyp = dict(zip(cols["synset_id"], cols["hypernyms"]))
    types = all_onto_types(hyp, dict(zip(cols["synset_id"], cols["pos"])))
    cols["onto_type"] = [types[sid] for sid in cols["synset_id"]]
    exceptions: dict[str, set] = defaultdict(set)
    for pos_map in reader._exception_map.values():
        for form, bases in pos_map.items():
            exceptions[form.lower()].update(b.lower() for b in bases if b.lower() != form.lower())
    cols["exceptions"] = {k: tuple(sorted(v)) for k, v in exceptions.items() if v}
    return cols
