"""Parsing and cleaning of GCIDE entries as dictd serves them (dict-gcide's gcide.dict.dz).

An entry ("block") looks like

    Bank \\Bank\\ (b[a^][ng]k), n. [OE. banke; akin to E. bench ...]
       1. A mound, pile, or ridge of earth, raised above the
          surrounding level; as, a bank of clouds; a bank of snow.
          [1913 Webster]

                They cast up a bank against the city. --2 Sam. xx.
          [1913 Webster]

       5. (Mining)
          (a) The face of the coal at which miners are working.
       {Bank swallow}, a small American and European swallow
          ({Clivicola riparia}) that nests in a hole ...
          [1913 Webster]

parse_block() returns one RawSense per definition: the header (headwords with their pronunciations
between backslashes, the part-of-speech label, the etymology in brackets, field labels such as (Zool.))
is removed; numbered senses "1." and lettered sub-senses "(a)" are split; "Note:", "Syn:", "Usage:"
paragraphs and indented quotations are dropped; a "{Phrase}, definition" paragraph becomes a sense of
the phrase; a source tag line ("[1913 Webster]", "[WordNet 1.5]") closes the senses before it, and those
closed by a WordNet tag are flagged wordnet_derived (GCIDE copied them from WordNet 1.5).
clean_text() then decodes GCIDE's character codes (a["e]roplane -> aëroplane, 45[deg] -> 45°), drops
the remaining bracketed labels ([Obs.], [Colloq.]), cross-reference sentences ("See {Ban}."), trailing
quotation authors ("--Shak."), turns {cross refs} into plain words, and moves "; as, a sly dog" usage
examples out of the definition.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_NAMED = {
    "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "deg": "°", "eth": "ð", "thorn": "þ", "THORN": "Þ",
    "sect": "§", "pounds": "£", "root": "√", "frac12": "½", "frac14": "¼", "frac34": "¾", "times": "×",
    "divide": "÷", "min": "′", "sec": "″", "prime": "′", "bprime": "″", "ng": "ŋ", "asl": "", "add": "",
    "udd": "", "dsdot": "", "flat": "♭", "sharp": "♯", "natural": "♮", "yogh": "ȝ", "imac": "ī",
    "cre": "", "th": "th", "hand": "☞", "sharp;": "♯", "bar": "",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ",
    "omicron": "ο", "pi": "π", "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "upsilon": "υ",
    "phi": "φ", "Phi": "Φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Omega": "Ω", "Gamma": "Γ", "Pi": "Π",
}
# [<mark><letters>] (diacritic before the letter) and [<letters><mark>] (breve after) -> combining marks
_PREFIX_MARKS = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "=": "\u0304", "~": "\u0303",
                 ",": "\u0327", ".": "\u0323", "-": "\u0304", "*": ""}
_CODE_PREFIX = re.compile(r"\[([\"'`^=~,.\-*])([A-Za-z]{1,2})\]")
_CODE_SUFFIX = re.compile(r"\[([A-Za-z]{1,2})\^\]")
_CODE_NAMED = re.compile(r"\[([A-Za-z]{2,8};?)\]")

_SENSE_START = re.compile(r"^\s+(\d{1,2})\.\s*(.*)$")
_SUBSENSE_START = re.compile(r"^\s+\(([a-z])\)\s*(.*)$")
_SKIP_PARA = re.compile(r"^\s*(?:Note|Syn|Usage|Obs|Examples?)\s*\d*\s*:", re.I)
_TAG_LINE = re.compile(r"^\s*\[([^\[\]]*)\]\s*$")


@dataclass
class RawSense:
    headwords: list[str]
    pos_label: str
    text: str
    kind: str = "sense"           # "sense" or "phrase"
    wordnet_derived: bool = False
    examples: list[str] = field(default_factory=list)


def decode_codes(text: str) -> str:
    """GCIDE's bracketed character codes to Unicode ("a[\"e]roplane" -> "aëroplane")."""
    def prefix(m):
        mark, letters = m.group(1), m.group(2)
        return unicodedata.normalize("NFC", letters[0] + _PREFIX_MARKS[mark] + letters[1:])

    def named(m):
        name = m.group(1)
        return _NAMED[name] if name in _NAMED else m.group(0)

    text = _CODE_PREFIX.sub(prefix, text)
    text = _CODE_SUFFIX.sub(lambda m: unicodedata.normalize("NFC", m.group(1)[0] + "\u0306" + m.group(1)[1:]), text)
    return _CODE_NAMED.sub(named, text)


def _skip_group(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index just past the balanced group starting at s[i] == open_c (len(s) if unbalanced)."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_c:
            depth += 1
        elif s[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(s)


def remove_groups(s: str, open_c: str = "[", close_c: str = "]") -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == open_c:
            i = _skip_group(s, i, open_c, close_c)
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def _strip_leading_labels(s: str) -> str:
    """Drop leading [etymology] groups and short (Field.) labels."""
    while True:
        s = s.lstrip(" ,;")
        if s.startswith("["):
            s = s[_skip_group(s, 0, "[", "]"):]
        elif s.startswith("("):
            end = _skip_group(s, 0, "(", ")")
            inner = s[1:end - 1]
            if len(inner.split()) <= 4 and inner[:1].isupper() and "{" not in inner:
                s = s[end:]
            else:
                return s
        else:
            return s


_HEADWORD = re.compile(r'^\s*(?:,|or)?\s*([^\\\[\]{}(),]+?)\s*\\[^\\]*\\\s*')


def parse_header(first: str) -> tuple[list[str], str, str]:
    """(headwords, pos label, rest of the paragraph) of an entry's first paragraph (lines joined)."""
    s, heads = first, []
    while True:
        m = _HEADWORD.match(s)
        if not m:
            break
        heads.append(decode_codes(m.group(1)).strip())
        s = s[m.end():]
        if s.startswith("("):  # pronunciation
            s = s[_skip_group(s, 0, "(", ")"):]
        s = re.sub(r"^\s*,?\s*(?:or\s+)?(?=\S*\\)", "", s)
    s = s.lstrip(" ,")
    m = re.match(r"^((?:[A-Za-z]{1,8}\.\s*(?:&\s*|or\s+|,\s*)?)+)", s)
    pos_label = ""
    if m:
        pos_label = " ".join(m.group(1).split()).rstrip(" ,&")
        s = s[m.end():]
        if re.match(r"^\s*of\s", s):  # "imp. & p. p. of {Dog}": an inflected form, no definition
            return heads, pos_label + " of", ""
    return heads, pos_label, _strip_leading_labels(s)


_CITATION = re.compile(r'\s*(?:"[^"]*"\s*)?--\s?(?=[A-Z0-9])(?!(?:Called|Used|Often|Also|Sometimes|So|See|Opposed|'
                       r'Usually|Chiefly|Applied|Commonly|Written|Formerly)\b)[^"{}]{0,80}$')
_SEE = re.compile(r"(?:^|(?<=[.;,]))\s*(?:See|Cf\.|Compare|Same as)\s+(?:also\s+)?(?:under\s+)?\{[^}]*\}[^.;]*[.;]?",
                  re.I)


_SOURCE_TAG = re.compile(r"\[?\s*(?:1913 Webster|Webster 1913 Suppl\.|WordNet 1\.[56]|PJC|RDH|Century Dict\.)"
                         r"[^\[\]]{0,40}\]")
_EMBEDDED_HEAD = re.compile(r"(?:^|\s)[A-Za-z][\w'\-]*(?: [A-Za-z][\w'\-]*){0,3} \\[^\\\s][^\\]*\\")
_QUOTE_CITE = re.compile(r'"[^"]{0,400}"\s*--\s?[A-Z][\w.\' ]{0,40}?\.(?=\s|$)')
_RUN_ON = re.compile(r"\s*--\s*\{?[A-Z][^\s,]*[`\"*][^,]*,.*$")  # "-- Sanc`ti*mo"ni*ous*ly, adv." derived forms


def clean_text(text: str) -> tuple[str, list[str]]:
    """(definition, usage examples) from a raw sense text (see the module docstring)."""
    text = " ".join(text.split())
    text = _EMBEDDED_HEAD.split(text, maxsplit=1)[0]  # another entry's header run into this text
    text = _RUN_ON.sub("", text)
    text = decode_codes(text)
    text = _SOURCE_TAG.sub("", text)
    text = remove_groups(text)
    text = text.replace("[", "").replace("]", "")
    text = _strip_leading_labels(text)
    text = _SEE.sub("", text)
    text = _QUOTE_CITE.sub("", text)
    text = _CITATION.sub("", text)
    text = re.sub(r"\{([^{}]*)\}", r"\1", text)
    text = text.replace("{", "").replace("}", "")
    examples = []
    m = re.search(r"[;:,]\s*as,\s+", text)
    if m:
        examples = [e.strip(" .;") for e in re.split(r";\s*", text[m.end():]) if e.strip(" .;")]
        text = text[:m.start()]
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"\s+([,;:.])", r"\1", " ".join(text.split()))
    text = text.strip(" ;,:-")
    if text and text[-1] not in ".!?)":
        text += "."
    return text, examples


def _paragraphs(lines: list[str]) -> list[list[str]]:
    paras, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)
    return paras


def _phrase(text: str) -> tuple[list[str], str]:
    """("{Bank swallow}, def" | "{To bank a fire}, {To bank up a fire}, def") -> (phrases, definition)."""
    phrases, s = [], text.strip()
    while s.startswith("{"):
        end = _skip_group(s, 0, "{", "}")
        phrases.append(decode_codes(s[1:end - 1]).strip())
        s = s[end:]
        s = re.sub(r"^\s*(?:,|or)?\s*(?:or\s+)?(?=\{)", "", s)
    s = _strip_leading_labels(s.lstrip(" ,"))
    return [p for p in phrases if p], s.lstrip(" ,.")


def _end_senses_at_tag(line: str, pending: list) -> bool:
    """A tag line closes the senses read since the last one (a WordNet tag marks them wordnet_derived).
    True when `line` is a tag line."""
    m = _TAG_LINE.match(line)
    if not m:
        return False
    if "wordnet" in m.group(1).lower():
        for sense in pending:
            sense.wordnet_derived = True
    pending.clear()
    return True


def parse_block(text: str) -> list[RawSense]:
    """Every definition in one GCIDE entry (uncleaned text; see clean_text)."""
    lines = text.replace("\r", "").split("\n")
    paras = _paragraphs(lines)
    if not paras:
        return []
    # Header: the first paragraph up to its first numbered sense line.
    first = paras[0]
    cut = next((i for i, ln in enumerate(first) if i > 0 and (_SENSE_START.match(ln) or _TAG_LINE.match(ln))),
               len(first))
    heads, pos_label, rest = parse_header(" ".join(ln.strip() for ln in first[:cut]))
    if not heads:
        return []
    senses: list[RawSense] = []
    pending: list[RawSense] = []
    current: RawSense | None = None

    def start(txt: str, kind: str = "sense", words=None) -> RawSense:
        sense = RawSense(words or heads, pos_label, txt, kind)
        senses.append(sense)
        pending.append(sense)
        return sense

    if rest.strip() and not pos_label.endswith(" of"):
        current = start(rest)
    body = [first[cut:]] + paras[1:]
    for para in body:
        if not para:
            continue
        head = para[0]
        indent = len(head) - len(head.lstrip())
        if _SKIP_PARA.match(head):
            current = None
            for ln in para:
                m = _TAG_LINE.match(ln)
                if m and "wordnet" in m.group(1).lower():
                    for s in pending:
                        s.wordnet_derived = True
                if m:
                    pending.clear()
            continue
        if head.lstrip().startswith("{"):
            words, definition = _phrase(" ".join(ln.strip() for ln in para if not _TAG_LINE.match(ln)))
            current = None
            if words and definition:
                for w in words:
                    start(definition, "phrase", [w])
            for ln in para:
                _end_senses_at_tag(ln, pending)
            continue
        if indent >= 8 and not (_SENSE_START.match(head) or _SUBSENSE_START.match(head) or _TAG_LINE.match(head)):
            current = None  # an indented quotation
            continue
        for ln in para:
            if _end_senses_at_tag(ln, pending):
                continue
            m = _SENSE_START.match(ln) or _SUBSENSE_START.match(ln)
            if m:
                if current is not None and _SUBSENSE_START.match(ln) and current.kind == "sense" and \
                        not clean_text(current.text)[0].strip(" ."):
                    senses.remove(current)  # "5. (Mining)": a label-only parent of lettered sub-senses
                    if current in pending:
                        pending.remove(current)
                current = start(m.group(2))
            elif current is not None:
                current.text += " " + ln.strip()
    return senses
