"""DefSent+ dictionaries: the paper's TSV layout and kaikki dumps through one code path, merging rules, bad input."""

import json

import pytest

from spherekit.experiments.defsent.data import (
    Dictionary, DictionaryFormatError, find_dictionary_file, from_records, hold_out_reverse, read_dictionary_file,
    read_kaikki, read_tsv, single_token, subsample,
)

SEP = "<|list_more_def|>"


def _tsv(tmp_path, lines, name="a.tsv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_tsv_records_and_dictionary(tmp_path):
    path = _tsv(tmp_path, [f"revitalize\tgive new life or vigor to{SEP}imbue something with new life",
                           "", "cup\ta small open container"])
    records = read_tsv(path)
    assert records == [("revitalize", "give new life or vigor to"), ("revitalize", "imbue something with new life"),
                       ("cup", "a small open container")]
    d = from_records(records, "a")
    assert d.entries == ["revitalize", "cup"] and d.n_definitions == 3
    texts, labels = d.pairs()
    assert labels == [0, 0, 1] and texts[2] == "a small open container"


def test_merge_combines_entries_and_drops_duplicate_definitions():
    records = [("Dog", "a domestic animal"), ("cat", "a small feline"), ("dog", "A domestic animal."),
               ("dog", "a man"), ("cat", "")]
    d = from_records(records, "a", drop=frozenset({"bird"}), drop_definitions=frozenset({"a man"}))
    assert d.entries == ["dog", "cat"]
    assert d.definitions == [("a domestic animal",), ("a small feline",)]


@pytest.mark.parametrize("lines, line, entry, match", [
    (["cup\ta container", "plate a dish"], 2, None, "no tab"),
    (["cup\ta container", f"plate\t {SEP} "], 2, "plate", "no definitions"),
    (["cup\ta container", "plate\ta dish", "Cup\ta mug"], 3, "Cup", "duplicate entry .first on line 1"),
    (["\ta dish"], 1, None, "empty entry"),
])
def test_tsv_errors_name_file_line_and_entry(tmp_path, lines, line, entry, match):
    path = _tsv(tmp_path, lines)
    with pytest.raises(DictionaryFormatError, match=match) as err:
        read_tsv(path)
    assert err.value.path == str(path) and err.value.line == line and err.value.entry == entry
    assert f"{path}:{line}" in str(err.value)


def test_entry_without_definitions_in_a_dictionary():
    with pytest.raises(DictionaryFormatError, match="'cup': has no definitions"):
        Dictionary("b", ["cup"], [()])


def test_kaikki_goes_through_the_same_code(tmp_path):
    path = tmp_path / "b.jsonl"
    rows = [{"word": "cup", "pos": "noun", "lang_code": "en",
             "senses": [{"glosses": ["A small open container."]},
                        {"glosses": ["plural of cups"], "tags": ["form-of"]}]},
            {"word": "cup", "pos": "verb", "lang_code": "en", "senses": [{"glosses": ["To form into a cup."]}]},
            {"word": "Tasse", "pos": "noun", "lang_code": "de", "senses": [{"glosses": ["cup"]}]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert find_dictionary_file(tmp_path, "b") == path and find_dictionary_file(tmp_path, "a") is None
    d = from_records(read_dictionary_file(path), "b")
    assert d.entries == ["cup"] and d.definitions == [("A small open container.", "To form into a cup.")]
    path.write_text('{"word": "cup", "pos": "noun", "lang_code": "en", "senses": [{"glosses": ["ok"]}]}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"b.jsonl:2"):
        read_kaikki(path)


def test_single_token_subsample_and_reverse_holdout(tiny_model):
    tok = tiny_model[0].tokenizer
    d = from_records([("cup", "a container"), ("revitalizer", "one who revives"), ("plate", "a dish"),
                      ("plate", "a flat dish"), ("give up", "to stop")], "b")
    c = single_token(d, tok)
    assert c.entries == ["cup", "plate"] and c.name == "c"
    s = subsample(d, max_entries=2, max_definitions=1, seed=0)
    assert s.n_entries == 2 and all(len(x) == 1 for x in s.definitions)
    assert set(s.entries) <= set(d.entries) and s.entries == [e for e in d.entries if e in s.entries]
    h = hold_out_reverse(d, n=5, seed=0)
    assert h.held_out == [("a flat dish", 2)] and h.definitions[2] == ("a dish",)
    assert h.n_definitions == d.n_definitions - 1
