"""An offline emotion text set for the 12-label Empirical Circumplex Model (ECM) of "Mapping the Circumplex
of Affect".

    EMOTIONS, ANGLES        the 12 labels and their angles in degrees
    items = build_emotion_set(seed=0)       # list[EmotionItem(text, label, provenance)], balanced per label
    train, test = emotion_split(n_train_per_label=None, n_test_per_label=50)   # all sources, disjoint
    circumplex_label_distance()             # (12, 12) CD matrix in EMOTIONS order (the paper's sec. 4.2)

Angles. The paper places 12 labels on the circle in this order (Figure 3; the text states love at 0 degrees,
calmness at 270 and trust at 330, love as the opposite of disgust and trust as the opposite of fear):
love 0, joy 30, excitement 60, surprise 90, anger 120, fear 150, disgust 180, sadness 210, boredom 240,
calmness 270, relief 300, trust 330 (30-degree steps, consistent with every stated angle and opposition).
Polarities for the Circumplex Distance (Figure 3 is not in our copy of the paper; our choice, by
Russell's valence axis): labels on the arousal axis (surprise 90, calmness 270) are neutral, those on
the pleasant side (300..60) positive, those on the unpleasant side (120..240) negative.

Texts (provenance recorded per item):
  WordNet  for each label, hand-picked seed synsets (EMOTION_SEEDS) and everything below them (hyponym
           closure; for adjectives the similar-to satellites): each synset's lemmas ("wordnet-lemma"),
           definition ("wordnet-gloss") and example sentences ("wordnet-example"), provenance "<kind>:<synset>".
  NRC      the NRC emotion lexicon of the PyPI package nrclex (nrclex/data/nrc_en.json): a word tagged with
           exactly one of NRC's eight emotions becomes an item of the mapped label (provenance "nrc:<emotion>").
           NRC_TO_LABEL: anger, fear, joy, sadness, disgust, surprise, trust map to themselves;
           anticipation -> excitement (aroused positive expectation, 60 degrees). NRC has no love, boredom,
           calmness or relief: those labels come from WordNet only.
  wordnet-related  (the paper builds its sets from 500 train + 100 test texts per label; WordNet and NRC
           alone give 53..748 per label, so more sources:)
           - EXTRA_SEEDS: hand-picked synsets for the labels WordNet covers thinly (relief: consolation,
             reassurance, relieve ...; calmness, boredom, surprise, love, trust: a few each) and their
             hyponyms / similar-to satellites ("wordnet-related-<kind>:<synset>");
           - the similar-to and also-see neighbours of every label synset ("wordnet-related-<kind>:<synset>");
           - the derivationally related forms of every label synset's lemmas (adore -> adoration,
             adorer; relief -> relieve) ("wordnet-derived-<kind>:<synset>"),
           kind = lemma | gloss | example, as for the wordnet source; synsets of EMOTION_SEEDS' own closure
           are never repeated here.
  gcide    GCIDE (spherekit.data.gcide) entries whose headword is a lemma of the label's synsets (all of
           the above: the label's "headwords"): each sense's definition ("gcide-def:<headword>"), its
           usage examples ("; as, ..." -> "gcide-example:<headword>") and the literary quotations printed
           under it (dictd source only; "gcide-quote:<headword>", the author citation "--Shak." cut off,
           3..60 words). Senses copied from WordNet 1.5 are left out. Headwords are ambiguous (relief:
           sculpture; bore: drill), so a sense is kept only when its definition contains one of the
           label's cue words: a one-word lemma of the label's synsets of which at least half of the
           WordNet senses (all parts of speech) belong to the label, or the label name itself
           (matched through inflections: "relieving" -> relieve). Quotations follow their sense.
           mask_headword=True removes the headword and its inflections from these GCIDE texts
           (spherekit.data.masking; "I will fear no evil" -> "I will no evil"); texts left without a
           letter are dropped. Other sources are never masked.
A text that would carry two labels is dropped (across all sources in use; compared lower-cased).
Balance: every label gets the same number of items (n_per_label, default the smallest label's pool
size), drawn uniformly from the label's pool (seeded). emotion_split draws a disjoint train/test split
(spherekit.data.labelled.balanced_split). Sources: build_emotion_set and emotion_pool default to
("wordnet", "nrc") (unchanged); ALL_SOURCES adds "wordnet-related" and "gcide". With WordNet 3.0, nrclex
and Debian's dict-gcide, ALL_SOURCES gives 259 (relief) to 996 (sadness) texts per label (WordNet + NRC:
53 to 748), so a balanced split reaches about 259 texts per label, not the paper's 600. Labels are weak
(a text takes the label of the word or sense it was found under), as befits an offline analogue.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

EMOTIONS = ("love", "joy", "excitement", "surprise", "anger", "fear", "disgust", "sadness", "boredom", "calmness",
            "relief", "trust")
ANGLES = {e: 30.0 * i for i, e in enumerate(EMOTIONS)}
POLARITY = {"love": "positive", "joy": "positive", "excitement": "positive", "surprise": "neutral",
            "anger": "negative", "fear": "negative", "disgust": "negative", "sadness": "negative",
            "boredom": "negative", "calmness": "neutral", "relief": "positive", "trust": "positive"}
NRC_TO_LABEL = {"anger": "anger", "fear": "fear", "joy": "joy", "sadness": "sadness", "disgust": "disgust",
                "surprise": "surprise", "trust": "trust", "anticipation": "excitement"}
NRC_EMOTIONS = frozenset(NRC_TO_LABEL)
EMOTION_SEEDS = {
    "love": ("love.n.01", "love.v.01", "love.v.02", "affection.n.01", "loving.a.01", "adoring.s.01"),
    "joy": ("joy.n.01", "joy.v.02", "joyful.a.01", "elated.s.01", "happiness.n.02", "gladness.n.01"),
    "excitement": ("exhilaration.n.01", "excitement.n.02", "excited.a.01", "thrill.n.01", "excite.v.01",
                   "eagerness.n.01", "enthusiasm.n.01"),
    "surprise": ("surprise.n.01", "astonishment.n.01", "surprised.a.01", "surprise.v.01", "amazed.s.01",
                 "astonish.v.01"),
    "anger": ("anger.n.01", "anger.n.02", "angry.a.01", "anger.v.01", "anger.v.02"),
    "fear": ("fear.n.01", "afraid.a.01", "fear.v.01", "frighten.v.01", "fearful.a.01"),
    "disgust": ("disgust.n.01", "disgusted.s.01", "disgust.v.01", "disgust.v.02", "repugnance.n.01"),
    "sadness": ("sadness.n.01", "sadness.n.02", "sad.a.01", "sorrow.n.01", "sorrow.n.02", "grieve.v.01"),
    "boredom": ("boredom.n.01", "bored.s.01", "bore.v.01", "tediousness.n.01", "blase.s.02", "boring.s.01",
                "dullness.n.02"),
    "calmness": ("calmness.n.03", "composure.n.01", "tranquillity.n.01", "repose.n.03", "peace.n.03",
                 "calm.v.03", "calm.a.01", "relax.v.01"),
    "relief": ("relief.n.01", "relief.n.02", "relieved.s.01", "respite.n.04", "alleviation.n.02", "ease.n.02"),
    "trust": ("trust.n.03", "faith.n.02", "reliance.n.01", "trust.v.01", "trustful.a.01", "confidence.n.02"),
}

# Extra seeds of the "wordnet-related" source (and GCIDE headwords), for the labels EMOTION_SEEDS covers thinly.
EXTRA_SEEDS = {
    "love": ("beloved.s.01", "love.v.03", "love.n.02"),
    "surprise": ("wonder.n.01", "wonder.v.03", "marvel.v.02", "amazing.s.01"),
    "boredom": ("monotony.n.01", "humdrum.s.02", "pall.v.01"),
    "calmness": ("relaxed.a.01", "calm.v.01", "calm.s.01"),
    "relief": ("comfort.n.02", "consolation.n.02", "solace.n.02", "relieve.v.01", "still.v.03", "relieve.v.08",
               "relieve.v.11", "unburden.v.01", "unbosom.v.01", "reassure.v.01", "reassure.v.02", "reassurance.n.01",
               "reassuring.a.01", "comforting.s.02", "soothe.v.02"),
    "trust": ("trust.v.02", "believe.v.03", "confidence.n.04", "reliance.n.01"),
}
DEFAULT_SOURCES = ("wordnet", "nrc")
ALL_SOURCES = ("wordnet", "nrc", "wordnet-related", "gcide")


@dataclass(frozen=True, slots=True)
class EmotionItem:
    text: str
    label: str
    provenance: str   # "<kind>:<ref>", e.g. "wordnet-gloss:<synset>", "nrc:<emotion>", "gcide-quote:<headword>"


def label_angles_radians() -> list[float]:
    """ANGLES in EMOTIONS order, in radians (the label_angles of spherekit.losses.CircularCSELoss)."""
    import math

    return [math.radians(ANGLES[e]) for e in EMOTIONS]


def circumplex_label_distance():
    """CD(i, j) = polarity distance + circular steps between the labels ("Mapping the Circumplex of Affect"
    (arXiv:2601.06575), sec. 4.2), EMOTIONS order."""
    from ..evaluation.clustering import circumplex_distance

    return circumplex_distance([int(ANGLES[e] // 30) for e in EMOTIONS], [POLARITY[e] for e in EMOTIONS])


def nrc_lexicon_path():
    """Path of nrclex's nrc_en.json; DataMissingError when nrclex is not installed."""
    from pathlib import Path

    from .._store import DataMissingError

    try:
        import nrclex
    except ImportError as exc:
        raise DataMissingError("nrclex", f"The NRC lexicon package nrclex is not installed ({exc}).",
                               install="pip install nrclex") from exc
    path = Path(nrclex.__file__).parent / "data" / "nrc_en.json"
    if not path.is_file():
        raise DataMissingError("nrclex", f"nrclex is installed but {path} is missing.", install="pip install nrclex")
    return path


def nrc_items(path=None) -> list[EmotionItem]:
    """One item per NRC word tagged with exactly one of NRC's eight emotions (mapped by NRC_TO_LABEL)."""
    lex = json.loads(open(path or nrc_lexicon_path(), encoding="utf-8").read())
    out = []
    for word, tags in sorted(lex.items()):
        emos = sorted(set(tags) & NRC_EMOTIONS)
        if len(emos) == 1:
            out.append(EmotionItem(word.replace("_", " "), NRC_TO_LABEL[emos[0]], f"nrc:{emos[0]}"))
    return out


def _below(reader, name: str) -> list:
    s = reader.synset(name)
    found = [s]
    found += list(s.closure(lambda x: x.hyponyms()))
    if s.pos() in ("a", "s"):
        found += s.similar_tos()
    return found


def _default_reader():
    from .wordnet import load_wordnet

    return load_wordnet().reader()


def _synset_items(s, label: str, prefix: str) -> list[EmotionItem]:
    """Lemmas, definition and examples of one synset as items "<prefix>-<kind>:<synset>"."""
    out = [EmotionItem(lem.replace("_", " "), label, f"{prefix}-lemma:{s.name()}") for lem in s.lemma_names()]
    out.append(EmotionItem(s.definition(), label, f"{prefix}-gloss:{s.name()}"))
    return out + [EmotionItem(e, label, f"{prefix}-example:{s.name()}") for e in s.examples()]


def _closure(reader, table: str, label: str, seeds) -> dict:
    """Synset name -> synset for the seeds and their hyponyms / similar-to satellites, in traversal order.
    ValueError naming the table entry when WordNet lacks a seed."""
    from nltk.corpus.reader.wordnet import WordNetError

    out: dict = {}
    for name in seeds:
        try:
            synsets = _below(reader, name)
        except WordNetError as exc:
            raise ValueError(f"{table}[{label!r}]: WordNet has no synset {name!r}") from exc
        for s in synsets:
            out.setdefault(s.name(), s)
    return out


def wordnet_items(reader=None) -> list[EmotionItem]:
    """Items from EMOTION_SEEDS and their hyponyms / similar-to satellites (lemmas, glosses, examples).
    KeyError-like ValueError naming a seed synset that the database lacks."""
    reader = reader if reader is not None else _default_reader()
    out = []
    for label in EMOTIONS:
        for s in _closure(reader, "EMOTION_SEEDS", label, EMOTION_SEEDS[label]).values():
            out += _synset_items(s, label, "wordnet")
    return out


@dataclass(frozen=True)
class LabelLexicon:
    """The WordNet synsets behind one label (name -> synset, disjoint, in traversal order) and the words
    drawn from them (see the module docstring)."""

    core: dict         # EMOTION_SEEDS and their hyponyms / similar-to satellites (the "wordnet" source)
    extra: dict        # EXTRA_SEEDS and theirs, minus core
    neighbours: dict   # similar-to / also-see neighbours of core + extra, minus both
    derived: dict      # synsets of the derivationally related forms of core + extra lemmas, minus the above
    headwords: tuple   # sorted lower-cased lemma names of all four ("_" -> " ")
    cues: frozenset    # one-word lemmas with >= half their WordNet senses in the label, and the label


def _neighbours(synsets: dict) -> tuple[dict, dict]:
    """(similar-to / also-see neighbours, derivationally related synsets) of the given synsets."""
    near: dict = {}
    derived: dict = {}
    for s in synsets.values():
        for x in s.similar_tos() + s.also_sees():
            near.setdefault(x.name(), x)
        for lem in s.lemmas():
            for d in lem.derivationally_related_forms():
                derived.setdefault(d.synset().name(), d.synset())
    return near, derived


def _cue_words(reader, label: str, synsets: dict, headwords) -> frozenset:
    """The label name and every one-word headword of which at least half the WordNet senses are in synsets."""
    cues = {label}
    for w in headwords:
        if " " in w or "-" in w:
            continue
        senses = reader.synsets(w)
        if senses and 2 * sum(x.name() in synsets for x in senses) >= len(senses):
            cues.add(w)
    return frozenset(cues)


def emotion_lexicon(reader=None) -> dict[str, LabelLexicon]:
    """LabelLexicon per label (EMOTIONS order) from EMOTION_SEEDS, EXTRA_SEEDS and their WordNet relations."""
    from .records import term_key

    reader = reader if reader is not None else _default_reader()
    out = {}
    for label in EMOTIONS:
        core = _closure(reader, "EMOTION_SEEDS", label, EMOTION_SEEDS[label])
        extra = {k: v for k, v in _closure(reader, "EXTRA_SEEDS", label, EXTRA_SEEDS.get(label, ())).items()
                 if k not in core}
        near, derived = _neighbours({**core, **extra})
        near = {k: v for k, v in near.items() if k not in core and k not in extra}
        derived = {k: v for k, v in derived.items() if k not in core and k not in extra and k not in near}
        every = {**core, **extra, **near, **derived}
        heads = tuple(sorted({term_key(lem) for s in every.values() for lem in s.lemma_names()}))
        out[label] = LabelLexicon(core, extra, near, derived, heads, _cue_words(reader, label, every, heads))
    return out


def wordnet_related_items(reader=None, *, lexicon=None) -> list[EmotionItem]:
    """Lemmas, glosses and examples of each label's EXTRA_SEEDS closure and similar-to / also-see
    neighbours ("wordnet-related-<kind>:<synset>") and of its derivationally related synsets
    ("wordnet-derived-<kind>:<synset>")."""
    lexicon = lexicon if lexicon is not None else emotion_lexicon(reader)
    out = []
    for label in EMOTIONS:
        lex = lexicon[label]
        for s in list(lex.extra.values()) + list(lex.neighbours.values()):
            out += _synset_items(s, label, "wordnet-related")
        for s in lex.derived.values():
            out += _synset_items(s, label, "wordnet-derived")
    return out


# ---- GCIDE: definitions, usage examples and literary quotations of the label headwords ----

_WORDS = re.compile(r"[A-Za-z]+")
_CITE = re.compile(r"\s--\s?(?=\S)")                     # "... no fear was. --Ps. liii. 5."
_INLINE_QUOTE = re.compile(r'"([^"]{8,400})"\s*--\s?[A-Z]')  # a quotation run into a definition
QUOTE_WORDS = (3, 60)


def has_cue(text: str, cues) -> bool:
    """Whether some word of text, or one of its base forms (spherekit.data.masking.base_forms), is in cues."""
    from .masking import base_forms

    return any(base_forms(w) & cues for w in _WORDS.findall(text))


def _dictd_entries(folder, terms) -> list[str]:
    """Texts of the dictd GCIDE entries indexed under any of terms (term_key form), in file order."""
    import gzip
    from pathlib import Path

    from ._gcide_read import decode_b64
    from .records import term_key

    folder = Path(folder)
    index, spans = folder / "gcide.index", set()
    with open(index, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise ValueError(f"{index}:{lineno}: expected 'headword<TAB>offset<TAB>length', got {line!r}")
            if term_key(parts[0]) in terms:
                spans.add((decode_b64(parts[1]), decode_b64(parts[2])))
    dz = folder / "gcide.dict.dz"
    raw = gzip.decompress(dz.read_bytes()) if dz.is_file() else (folder / "gcide.dict").read_bytes()
    out = []
    for off, length in sorted(spans):
        chunk = raw[off:off + length]
        try:
            out.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(chunk.decode("cp1252", errors="replace"))
    return out


def _tidy_quote(text: str) -> str:
    from ._gcide_parse import decode_codes

    text = re.sub(r"\{([^{}]*)\}", r"\1", decode_codes(text))
    for ch in "{}[]":
        text = text.replace(ch, "")
    return " ".join(text.split()).strip(' "')


def _quote_text(para: list[str]) -> str:
    """An indented quotation paragraph without its source tag lines and its author citation."""
    from ._gcide_parse import _TAG_LINE

    joined = " " + " ".join(ln.strip() for ln in para if not _TAG_LINE.match(ln))
    return _tidy_quote(_CITE.split(joined, maxsplit=1)[0])


def entry_quotations(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(headwords, [(cleaned definition of the sense, quotation)]) of one dictd GCIDE entry: every
    indented quotation paragraph (also under a Note:) and every '"..." --Author' run into a sense,
    paired with the numbered / lettered sense it follows; quotations under {phrase} sub-entries skipped."""
    from ._gcide_parse import (_SENSE_START, _SKIP_PARA, _SUBSENSE_START, _TAG_LINE, _paragraphs, clean_text,
                               parse_header)

    paras = _paragraphs(text.replace("\r", "").split("\n"))
    if not paras:
        return [], []
    first = paras[0]
    cut = next((i for i, ln in enumerate(first) if i > 0 and (_SENSE_START.match(ln) or _TAG_LINE.match(ln))),
               len(first))
    heads, _, rest = parse_header(" ".join(ln.strip() for ln in first[:cut]))
    senses: list[list[str]] = [[rest]] if rest.strip() else []
    current = 0 if senses else None
    quotes: list[tuple[int, str]] = []
    for para in [first[cut:]] + paras[1:]:
        if not para or _SKIP_PARA.match(para[0]):
            continue
        head = para[0]
        if head.lstrip().startswith("{"):
            current = None
            continue
        if len(head) - len(head.lstrip()) >= 8 and not (
                _SENSE_START.match(head) or _SUBSENSE_START.match(head) or _TAG_LINE.match(head)):
            if current is not None:
                quotes.append((current, _quote_text(para)))
            continue
        for ln in para:
            m = None if _TAG_LINE.match(ln) else (_SENSE_START.match(ln) or _SUBSENSE_START.match(ln))
            if m:
                senses.append([m.group(2)])
                current = len(senses) - 1
            elif current is not None and not _TAG_LINE.match(ln):
                senses[current].append(ln.strip())
    raw = [" ".join(s) for s in senses]
    quotes += [(i, _tidy_quote(m.group(1))) for i, r in enumerate(raw) for m in _INLINE_QUOTE.finditer(r)]
    return heads, [(clean_text(raw[i])[0], q) for i, q in quotes]


def gcide_quotations(folder, headwords) -> dict[str, list[tuple[str, str]]]:
    """headword -> [(sense definition, quotation)] from the dictd GCIDE in folder, quotations of
    QUOTE_WORDS words only, for the entries whose own headword is one of headwords (term_key form)."""
    from .records import term_key

    wanted = set(headwords)
    out: dict[str, list[tuple[str, str]]] = {}
    for text in _dictd_entries(folder, wanted):
        heads, pairs = entry_quotations(text)
        pairs = [(d, q) for d, q in pairs if QUOTE_WORDS[0] <= len(q.split()) <= QUOTE_WORDS[1]]
        for h in dict.fromkeys(term_key(h) for h in heads):
            if h in wanted:
                out.setdefault(h, []).extend(pairs)
    return out


def _dictd_folder(gcide):
    from pathlib import Path

    source = getattr(gcide, "source", "") or ""
    return Path(source[len("dictd:"):]) if source.startswith("dictd:") else None


def _gcide_item(text: str, label: str, kind: str, head: str, masker) -> list[EmotionItem]:
    if masker is not None:
        text = masker(text, head)
    text = " ".join(text.split())
    return [EmotionItem(text, label, f"{kind}:{head}")] if any(c.isalpha() for c in text) else []


def gcide_items(gcide=None, *, reader=None, lexicon=None, mask_headword: bool = False) -> list[EmotionItem]:
    """GCIDE definitions, usage examples and quotations of each label's headwords whose sense
    definition carries one of the label's cues (see the module docstring). gcide: a loaded
    spherekit.data.gcide.Gcide (default load_gcide()); quotations need its dictd source."""
    from .masking import HeadwordMasker

    if gcide is None:
        from .gcide import load_gcide

        gcide = load_gcide()
    lexicon = lexicon if lexicon is not None else emotion_lexicon(reader)
    folder = _dictd_folder(gcide)
    quotes = gcide_quotations(folder, {h for lex in lexicon.values() for h in lex.headwords}) if folder else {}
    masker = HeadwordMasker() if mask_headword else None
    out = []
    for label in EMOTIONS:
        lex = lexicon[label]
        for head in lex.headwords:
            for sense in gcide.senses_of(head, include_wordnet_derived=False):
                if has_cue(sense.definition, lex.cues):
                    out += _gcide_item(sense.definition, label, "gcide-def", head, masker)
                    for ex in sense.examples:
                        out += _gcide_item(ex, label, "gcide-example", head, masker)
            for definition, quote in quotes.get(head, ()):
                if has_cue(definition, lex.cues):
                    out += _gcide_item(quote, label, "gcide-quote", head, masker)
    return out


# ---- pools, balanced sets and splits ----

def _check_sources(sources) -> tuple[str, ...]:
    if isinstance(sources, str) or not sources or any(s not in ALL_SOURCES for s in sources):
        raise ValueError(f"sources: expected a non-empty subset of {ALL_SOURCES}, got {sources!r}")
    return tuple(s for s in ALL_SOURCES if s in sources)


def _merge(items: list[EmotionItem]) -> dict[str, list[EmotionItem]]:
    """Per label: the items whose text (lower-cased, stripped) has one label only, first of duplicates in
    (provenance, text) order, so the pool does not depend on set iteration order (PYTHONHASHSEED)."""
    items = sorted(items, key=lambda it: (it.provenance, it.text))
    labels_of: dict[str, set] = {}
    for it in items:
        labels_of.setdefault(it.text.strip().lower(), set()).add(it.label)
    pool: dict[str, list[EmotionItem]] = {e: [] for e in EMOTIONS}
    seen = set()
    for it in items:
        key = it.text.strip().lower()
        if len(labels_of[key]) == 1 and key and key not in seen:
            seen.add(key)
            pool[it.label].append(it)
    return pool


def emotion_pool(*, sources=DEFAULT_SOURCES, reader=None, nrc_path=None, gcide=None,
                 mask_headword: bool = False) -> dict[str, list[EmotionItem]]:
    """Every candidate item per label, texts with two labels dropped, duplicates within a label merged.
    Sources are read in ALL_SOURCES order whatever the order given (a fixed pool for a fixed set)."""
    sources = _check_sources(sources)
    if reader is None and any(s != "nrc" for s in sources):
        reader = _default_reader()
    lexicon = emotion_lexicon(reader) if {"wordnet-related", "gcide"} & set(sources) else None
    items: list[EmotionItem] = []
    for src in sources:
        if src == "wordnet":
            items += wordnet_items(reader)
        elif src == "nrc":
            items += nrc_items(nrc_path)
        elif src == "wordnet-related":
            items += wordnet_related_items(reader, lexicon=lexicon)
        else:
            items += gcide_items(gcide, reader=reader, lexicon=lexicon, mask_headword=mask_headword)
    return _merge(items)


def source_of(item: EmotionItem) -> str:
    """The provenance kind of an item ("wordnet-gloss", "nrc", "gcide-quote", ...)."""
    return item.provenance.partition(":")[0]


def pool_sizes(pool: dict[str, list[EmotionItem]]) -> dict[str, dict[str, int]]:
    """label -> {provenance kind: count, "total": count} of a pool (for reports)."""
    out = {}
    for label, items in pool.items():
        counts: dict[str, int] = {}
        for it in items:
            counts[source_of(it)] = counts.get(source_of(it), 0) + 1
        out[label] = {**dict(sorted(counts.items())), "total": len(items)}
    return out


def build_emotion_set(*, n_per_label: int | None = None, seed: int = 0, sources=DEFAULT_SOURCES, reader=None,
                      nrc_path=None, gcide=None, mask_headword: bool = False) -> list[EmotionItem]:
    """A balanced labelled set: n_per_label items per label (default: the smallest label's pool size),
    drawn uniformly from each label's pool with the seed; ordered label by label round-robin, so any
    prefix of a multiple of 12 items stays balanced. ValueError when a label has fewer than n_per_label."""
    pool = emotion_pool(sources=sources, reader=reader, nrc_path=nrc_path, gcide=gcide, mask_headword=mask_headword)
    sizes = {e: len(v) for e, v in pool.items()}
    smallest = min(sizes.values())
    if n_per_label is None:
        n_per_label = smallest
    if isinstance(n_per_label, bool) or not isinstance(n_per_label, int) or n_per_label < 1:
        raise ValueError(f"n_per_label: expected a positive int, got {n_per_label!r}")
    short = {e: n for e, n in sizes.items() if n < n_per_label}
    if short:
        raise ValueError(f"n_per_label: {n_per_label} items per label requested, but these labels have fewer: {short}")
    rng = random.Random(f"{seed}:emotion")
    chosen = {e: rng.sample(pool[e], n_per_label) for e in EMOTIONS}
    return [chosen[e][i] for i in range(n_per_label) for e in EMOTIONS]


def _check_labels(labels) -> tuple[str, ...]:
    if isinstance(labels, str) or not labels:
        raise ValueError(f"labels: expected a non-empty sequence of names from {EMOTIONS}, got {labels!r}")
    labels = tuple(dict.fromkeys(labels))
    unknown = [x for x in labels if x not in EMOTIONS]
    if unknown or len(labels) < 2:
        raise ValueError(f"labels: expected at least 2 names from {EMOTIONS}, got {labels!r}"
                         + (f" (unknown: {unknown})" if unknown else ""))
    return labels


def emotion_split(*, n_train_per_label: int | None, n_test_per_label: int, seed: int = 0, sources=ALL_SOURCES,
                  labels=EMOTIONS, reader=None, nrc_path=None, gcide=None,
                  mask_headword: bool = False) -> tuple[list[EmotionItem], list[EmotionItem]]:
    """A fixed, balanced, seeded, disjoint (train, test) split of the offline set for `labels`
    (spherekit.data.labelled.balanced_split): n_test_per_label test texts per label drawn first, train =
    the rest, undersampled to n_train_per_label (None: the smallest label's remainder). Both lists are
    ordered label by label round-robin. ValueError naming the argument when a label has too few texts."""
    from .labelled import balanced_split

    labels = _check_labels(labels)
    pool = emotion_pool(sources=sources, reader=reader, nrc_path=nrc_path, gcide=gcide, mask_headword=mask_headword)
    return balanced_split([it for e in labels for it in pool[e]], n_train_per_label, n_test_per_label, seed)
