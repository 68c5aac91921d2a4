"""Coarse ontological type of a WordNet noun ("Principles of Concept Representation in Sentence Encoders"
(arXiv:2606.06994), appendix G, "ontological type swap": a small closed set person, organization, location, event,
artifact, biological entity, abstract concept).

A noun synset gets the type of the FIRST anchor below that is among its ancestors (the transitive
closure of hypernyms and instance hypernyms, the synset itself included). The order settles multiple
inheritance: a teacher is a person before an organism; a company an organization before an abstraction.
"abstract concept" is given only to nouns under abstraction.n.06 that have no physical_entity.n.01
ancestor (water is both a substance and, through part.n.01, a relation: it is not abstract). Nouns
matching no anchor (substances, natural objects such as rock.n.01, foods) and all verbs, adjectives
and adverbs get None: the paper's closed set has no type for them.
"""

from __future__ import annotations

ONTO_TYPES = ("person", "organization", "location", "event", "artifact", "biological entity", "abstract concept")

# (anchor synset, type), checked in order.
ONTO_ANCHORS = (
    ("person.n.01", "person"),
    ("organization.n.01", "organization"),
    ("social_group.n.01", "organization"),
    ("organism.n.01", "biological entity"),
    ("living_thing.n.01", "biological entity"),
    ("body_part.n.01", "biological entity"),
    ("plant_part.n.01", "biological entity"),
    ("taxonomic_group.n.01", "biological entity"),
    ("biological_group.n.01", "biological entity"),
    ("location.n.01", "location"),
    ("body_of_water.n.01", "location"),
    ("geological_formation.n.01", "location"),
    ("land.n.04", "location"),
    ("event.n.01", "event"),
    ("process.n.06", "event"),
    ("phenomenon.n.01", "event"),
    ("artifact.n.01", "artifact"),
)
ABSTRACT_ROOT = "abstraction.n.06"
PHYSICAL_ROOT = "physical_entity.n.01"


def onto_type(ancestors, pos: str) -> str | None:
    """The coarse type for a synset of part of speech `pos` whose ancestor set (itself included) is
    `ancestors`; see the module docstring."""
    if pos != "n":
        return None
    for anchor, kind in ONTO_ANCHORS:
        if anchor in ancestors:
            return kind
    if ABSTRACT_ROOT in ancestors and PHYSICAL_ROOT not in ancestors:
        return "abstract concept"
    return None


def all_onto_types(hypernyms: dict[str, list[str]], pos: dict[str, str]) -> dict[str, str | None]:
    """onto_type for every synset, given each synset's direct (instance) hypernyms. Iterative closure
    with memoisation (the noun hierarchy is a DAG about 20 levels deep)."""
    closure: dict[str, frozenset] = {}

    def ancestors(sid: str) -> frozenset:
        stack = [sid]
        while stack:
            top = stack[-1]
            if top in closure:
                stack.pop()
                continue
            todo = [h for h in hypernyms.get(top, ()) if h not in closure]
            if todo:
                stack.extend(todo)
                continue
            acc = {top}
            for h in hypernyms.get(top, ()):
                acc |= closure[h]
            closure[top] = frozenset(acc)
            stack.pop()
        return closure[sid]

    return {sid: (onto_type(ancestors(sid), p) if p == "n" else None) for sid, p in pos.items()}
