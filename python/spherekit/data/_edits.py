"""Minimal rule-based edits of a parsed sentence (spaCy Doc), shared by the hard-negative rules
(spherekit.data.hard_negatives, "Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994)
appendix G) and the structural near-misses (spherekit.data.nearmiss, "Training for Compositional Sensitivity
Reduces Dense Retrieval Generalization" (arXiv:2604.16351)). Each edit returns the edited text, or None when it
does not apply. Whitespace and the rest of the text are kept exactly (tokens are re-joined with their own trailing
whitespace).

    negate(doc)                   first finite verb or copula: insert "not" (do-support for main verbs),
                                  or remove the negation when that verb is already negated
    negate_noun_phrase(doc)       a bare noun phrase (no finite verb; root a noun or pronoun): "not" before it
                                  ("a mammal" -> "not a mammal"), or remove a "not" already there
    antonym_flip(doc, wordnet)    the shallowest content word (dependency depth, then position) with a
                                  WordNet antonym of its part of speech -> that antonym (inflected like it)
    subject_object_swap(doc)      swap the nsubj and dobj subtrees of the first verb that has both (nouns)
                                  when only the verb group lies between them
    attribute_swap(doc)           swap the adjectives (amod) of the first two nearby nouns (same clause)
                                  that carry different ones
    spatial_flip(doc)             the first spatial expression -> its opposite (above/below, left/right, ...)
    synonym_paraphrase(doc, wordnet)  a monosemous content word -> another lemma of its only synset
"""

from __future__ import annotations

FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
CLAUSE_DEPS = frozenset({"ROOT", "relcl", "ccomp", "conj", "advcl", "csubj", "parataxis", "aux", "auxpass",
                         "cop", "xcomp"})
DO_SUPPORT = {"VBZ": "does", "VBP": "do", "VBD": "did"}
NEGATORS = frozenset({"not", "n't", "never"})
VERB_GROUP = frozenset({"aux", "auxpass", "neg", "advmod", "prt"})
CLAUSE_BREAKS = frozenset({";", ":", "(", ")", "."})
MAX_ATTRIBUTE_GAP = 8
WN_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}

# single-token spatial opposites, and the parts of speech for which the token is spatial
SPATIAL_WORDS = {
    "above": "below", "below": "above", "beneath": "above", "underneath": "above",
    "over": "under", "under": "over", "inside": "outside", "outside": "inside",
    "upstairs": "downstairs", "downstairs": "upstairs", "up": "down", "down": "up",
    "north": "south", "south": "north", "east": "west", "west": "east",
    "northern": "southern", "southern": "northern", "eastern": "western", "western": "eastern",
    "behind": "in front of",
}
# words that are spatial only as a preposition with an object (over the years, up the ante are not excluded)
NEEDS_POBJ = frozenset({"over", "under", "up", "down"})


def _join(pieces) -> str:
    return "".join(pieces).strip()


def _texts(doc) -> list[str]:
    return [t.text_with_ws for t in doc]


def _case_like(word: str, model: str) -> str:
    if model[:1].isupper() and not word[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def is_finite(tok) -> bool:
    """A finite verb or auxiliary heading (or helping) a clause: tag VBZ/VBP/VBD/MD or VerbForm=Fin."""
    if tok.pos_ not in ("VERB", "AUX"):
        return False
    finite = tok.tag_ in FINITE_TAGS or "Fin" in tok.morph.get("VerbForm")
    if not finite or tok.dep_ not in CLAUSE_DEPS:
        return False
    if tok.tag_ == "VBD" and tok.pos_ == "VERB":  # VBD/VBN confusions ("sometimes called X"): need a subject
        return any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in tok.children)
    return True


def negate(doc) -> str | None:
    """Negate the first finite verb or copula ("Principles of Concept Representation", appendix G: "is a
    warm-blooded vertebrate" -> "is not a warm-blooded vertebrate"). Auxiliaries, modals and the copula get "not"
    after them ("can" becomes "cannot"); a finite main verb gets do-support ("bit" -> "did not bite"). If that verb
    is already negated (a neg child or a following not / n't / never), the negation is removed instead."""
    out = _texts(doc)
    for tok in doc:
        if not is_finite(tok):
            continue
        head = tok.head if tok.dep_ in ("aux", "auxpass", "cop") else tok
        negs = [c for c in head.children if c.dep_ == "neg" or c.lower_ in NEGATORS and c.i == tok.i + 1]
        if tok.i + 1 < len(doc) and doc[tok.i + 1].lower_ in NEGATORS and tok.i + 1 not in {n.i for n in negs}:
            negs.append(doc[tok.i + 1])
        if negs:
            for n in negs:
                out[n.i] = ""
                if n.i > 0 and not doc[n.i - 1].whitespace_:  # "isn't barking" -> "is barking"
                    out[n.i - 1] = doc[n.i - 1].text + n.whitespace_
            return _join(out)
        if tok.pos_ == "AUX" or tok.tag_ == "MD" or tok.lemma_ == "be":
            if tok.lower_ == "can":
                out[tok.i] = tok.text + "not" + tok.whitespace_
            else:
                out[tok.i] = tok.text + " not" + (tok.whitespace_ or (" " if tok.i + 1 < len(doc) else ""))
            return _join(out)
        aux = DO_SUPPORT.get(tok.tag_)
        if aux is None or not tok.lemma_.isalpha():
            return None
        out[tok.i] = _case_like(aux, tok.text) + " not " + tok.lemma_.lower() + tok.whitespace_
        return _join(out)
    return None


NP_HEADS = frozenset({"NOUN", "PROPN", "PRON"})
NP_LEFT_DEPS = frozenset({"det", "predet", "amod", "compound", "nummod", "poss", "quantmod", "nmod", "advmod",
                          "npadvmod"})


def _phrase_head(root):
    """The root, or, when the root is a parenthesised usage label ("(botany) a small plant"), the phrase after it."""
    opened = any(c.dep_ == "punct" and c.text == "(" and c.i < root.i for c in root.children)
    after = [c for c in root.rights if c.dep_ == "appos"]
    return after[0] if opened and after else root


def negate_noun_phrase(doc) -> str | None:
    """Negate a definition that is a bare noun phrase ("Principles of Concept Representation", Figure 1: "a mammal"
    -> "not a mammal"; most WordNet noun glosses have no verb). Applies when no token is a finite verb heading a
    clause (is_finite) and the phrase head (the root; after a parenthesised usage label, the phrase that follows
    it) is a noun or pronoun, or has a determiner (the small tagger calls "mammal" in "a mammal" an adjective):
    "not" goes before the left edge of the head's determiners and pre-modifiers. A phrase right after "not" loses
    it; one already negated inside ("no longer a member", "no X") is left alone (None)."""
    if any(is_finite(t) for t in doc):
        return None
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None:
        return None
    head = _phrase_head(root)
    if head.pos_ not in NP_HEADS and not any(c.dep_ == "det" for c in head.children):
        return None
    start = min([head.i] + [c.left_edge.i for c in head.lefts if c.dep_ in NP_LEFT_DEPS])
    if any(t.dep_ == "neg" or t.lower_ in NEGATORS or t.lower_ == "no" for t in doc[start:head.i + 1]):
        return None
    out = _texts(doc)
    if start > 0 and doc[start - 1].lower_ == "not":
        out[start - 1] = ""
        return _join(out)
    first = doc[start]
    if start == 0 and first.text[:1].isupper() and first.pos_ != "PROPN" and first.text != "I":
        out[start] = "Not " + first.text[:1].lower() + first.text[1:] + first.whitespace_
    else:
        out[start] = "not " + out[start]
    return _join(out)


def _depth(tok) -> int:
    d = 0
    while tok.head.i != tok.i and d < 100:
        tok, d = tok.head, d + 1
    return d


def inflect(base: str, tag: str) -> str | None:
    """Regular English inflection of a base form for a Penn tag (None for comparatives, superlatives)."""
    if " " in base and tag not in ("NN", "VB", "JJ", "RB"):
        return None
    vowels = "aeiou"
    if tag in ("NNS", "VBZ"):
        if base.endswith(("s", "x", "z", "ch", "sh")):
            return base + "es"
        if base.endswith("y") and len(base) > 1 and base[-2] not in vowels:
            return base[:-1] + "ies"
        return base + "s"
    if tag in ("VBD", "VBN"):
        if base.endswith("e"):
            return base + "d"
        if base.endswith("y") and len(base) > 1 and base[-2] not in vowels:
            return base[:-1] + "ied"
        return base + "ed"
    if tag == "VBG":
        return (base[:-1] if base.endswith("e") and not base.endswith("ee") else base) + "ing"
    if tag in ("JJR", "JJS", "RBR", "RBS"):
        return None
    return base


def antonym_flip(doc, wordnet) -> str | None:
    """Replace a key content word by its WordNet antonym ("Principles of Concept Representation", appendix G: "a
    sustained increase in prices" -> "a sustained decrease in prices"). The key word is the shallowest content word
    in the dependency tree (ties: the earlier one) among those with an antonym for their part of speech; the
    antonym is WordNet's most frequent one, inflected regularly like the replaced word."""
    cands = [t for t in doc if t.pos_ in WN_POS and t.is_alpha]
    cands.sort(key=lambda t: (_depth(t), t.i))
    out = _texts(doc)
    for tok in cands:
        pos = WN_POS[tok.pos_]
        if wordnet.synsets_of(tok.lower_, pos):  # the surface form is a lemma ("goods"): its own antonyms
            ants = _exact_antonyms(wordnet, tok.lower_, pos)
            word = ants[0] if ants else None
        else:  # an inflected form: the base form's antonym, inflected the same way
            ants = [a for a in wordnet.antonyms_of(tok.lower_, pos) if a.lower() != tok.lower_]
            word = inflect(ants[0], tok.tag_) if ants else None
        if word is None:
            continue
        out[tok.i] = _case_like(word, tok.text) + tok.whitespace_
        _fix_article(doc, out, tok.i, word)
        return _join(out)
    return None


def _exact_antonyms(wordnet, word: str, pos: str) -> list[str]:
    """Antonyms of `word` itself (no base-form fallback), most frequent sense first."""
    found: dict[str, None] = {}
    for c in wordnet.synsets_of(word, pos):
        for a in c.antonyms:
            if a.lemma.lower() == word and a.antonym.lower() != word:
                found.setdefault(a.antonym, None)
    return list(found)


def _fix_article(doc, out: list[str], i: int, word: str) -> None:
    """a/an agreement of the token before position i with the new word there."""
    if i == 0 or doc[i - 1].lower_ not in ("a", "an"):
        return
    art = "an" if word[:1].lower() in "aeiou" else "a"
    prev = doc[i - 1]
    out[i - 1] = _case_like(art, prev.text) + prev.whitespace_


def _span(tok) -> tuple[int, int]:
    sub = list(tok.subtree)
    return sub[0].i, sub[-1].i + 1


def _swap_spans(doc, a: tuple[int, int], b: tuple[int, int]) -> str:
    (a0, a1), (b0, b1) = sorted([a, b])
    toks = _texts(doc)

    def text(lo, hi, last_ws):
        s = "".join(toks[lo:hi]).rstrip()
        return s + last_ws

    first = text(b0, b1, doc[a1 - 1].whitespace_)
    second = text(a0, a1, doc[b1 - 1].whitespace_)
    if a0 == 0 and doc[0].text[:1].isupper():
        if doc[0].pos_ != "PROPN" and doc[0].text != "I":
            second = second[:1].lower() + second[1:]
        if doc[b0].pos_ != "PROPN":
            first = first[:1].upper() + first[1:]
    return _join(toks[:a0] + [first] + toks[a1:b0] + [second] + toks[b1:])


def subject_object_swap(doc) -> str | None:
    """Swap the subject and direct-object subtrees of the first verb having both, each headed by a noun
    or proper noun ("the man bit the dog" -> "the dog bit the man"). Pronoun arguments are skipped
    (swapping them breaks case: "he saw her")."""
    for tok in doc:
        if tok.pos_ not in ("VERB", "AUX"):
            continue
        subj = [c for c in tok.children if c.dep_ == "nsubj" and c.pos_ in ("NOUN", "PROPN")]
        obj = [c for c in tok.children if c.dep_ == "dobj" and c.pos_ in ("NOUN", "PROPN")]
        if not subj or not obj:
            continue
        a, b = _span(subj[0]), _span(obj[0])
        if a[1] > tok.i or b[0] <= tok.i or a[1] > b[0]:
            continue
        # only the verb group between the arguments, and no clause punctuation inside them
        between = doc[a[1]:b[0]]
        if any(t.i != tok.i and not (t.head.i == tok.i and t.dep_ in VERB_GROUP) for t in between):
            continue
        if any(t.pos_ == "PUNCT" and t.text not in "-'" for t in list(doc[a[0]:a[1]]) + list(doc[b[0]:b[1]])):
            continue
        if doc[a[0]:a[1]].text.lower() == doc[b[0]:b[1]].text.lower():
            continue
        return _swap_spans(doc, a, b)
    return None


def attribute_swap(doc) -> str | None:
    """Swap the adjectival modifiers of the first two nouns that carry different ones ("a red car and a
    blue bike" -> "a blue car and a red bike"): the attribute-head binding changes, the words do not."""
    found = []
    for tok in doc:
        if tok.pos_ != "NOUN":
            continue
        adjs = [c for c in tok.children if c.dep_ == "amod" and c.pos_ == "ADJ" and c.is_alpha and c.i < tok.i]
        if found and (tok.i - found[0][0].i > MAX_ATTRIBUTE_GAP
                      or any(t.text in CLAUSE_BREAKS for t in doc[found[0][0].i:tok.i])):
            found = []  # the two nouns must be close and in the same clause
        if len(adjs) == 1 and all(adjs[0].lower_ != f[1].lower_ and tok.lower_ != f[0].lower_ for f in found):
            found.append((tok, adjs[0]))
        if len(found) == 2:
            break
    if len(found) < 2:
        return None
    (_, x), (_, y) = found
    out = _texts(doc)
    out[x.i] = _case_like(y.lower_, x.text) + x.whitespace_
    out[y.i] = _case_like(x.lower_, y.text) + y.whitespace_
    _fix_article(doc, out, x.i, y.lower_)
    _fix_article(doc, out, y.i, x.lower_)
    return _join(out)


def spatial_flip(doc) -> str | None:
    """Flip the first spatial expression ("Compositional Sensitivity" "spatial flips"): above/below, over/under,
    beneath/underneath -> above, inside/outside, up/down, upstairs/downstairs, north/south, east/west
    (and -ern forms), "in front of"/behind, "the left"/"the right". over, under, up and down count only as
    prepositions with an object; left/right only after "the"."""
    out = _texts(doc)
    n = len(doc)
    for tok in doc:
        low = tok.lower_
        if low == "in" and tok.i + 2 < n and doc[tok.i + 1].lower_ == "front" and doc[tok.i + 2].lower_ == "of":
            out[tok.i] = _case_like("behind", tok.text) + doc[tok.i + 2].whitespace_
            out[tok.i + 1] = out[tok.i + 2] = ""
            return _join(out)
        if low in ("left", "right") and tok.i > 0 and doc[tok.i - 1].lower_ == "the":
            out[tok.i] = _case_like("right" if low == "left" else "left", tok.text) + tok.whitespace_
            return _join(out)
        if low not in SPATIAL_WORDS:
            continue
        if low in NEEDS_POBJ and not (tok.pos_ == "ADP" and any(c.dep_ == "pobj" for c in tok.children)):
            continue
        if low in ("north", "south", "east", "west") and tok.pos_ == "PROPN":
            continue
        out[tok.i] = _case_like(SPATIAL_WORDS[low], tok.text) + tok.whitespace_
        _fix_article(doc, out, tok.i, SPATIAL_WORDS[low])
        return _join(out)
    return None


def synonym_paraphrase(doc, wordnet, rng=None) -> str | None:
    """A meaning-preserving variant: the first content word (or a seeded random one, given rng) that is
    monosemous in WordNet for its part of speech and has another single-word lemma in its only synset is
    replaced by that lemma (uninflected words only). None when no word qualifies."""
    cands = []
    for tok in doc:
        if tok.pos_ not in WN_POS or not tok.is_alpha or tok.lower_ != tok.lemma_.lower():
            continue
        syns = wordnet.synsets_of(tok.lower_, WN_POS[tok.pos_])
        if len(syns) != 1:
            continue
        others = [x for x in syns[0].lemmas if " " not in x and "-" not in x and x.lower() != tok.lower_
                  and x.islower() and tok.lower_ not in x.lower()]
        if others:
            cands.append((tok, others[0]))
    if not cands:
        return None
    tok, word = cands[rng.randrange(len(cands))] if rng is not None else cands[0]
    out = _texts(doc)
    out[tok.i] = _case_like(word, tok.text) + tok.whitespace_
    return _join(out)
