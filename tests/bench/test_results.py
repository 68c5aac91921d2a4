"""The benchmark CSV: atomic appends under concurrency, one header, a different header refused."""

from __future__ import annotations

import csv
import threading

import pytest

from spherekit.bench.results import COLUMNS, append_rows


def test_append_rows_is_atomic_and_header_consistent(tmp_path):
    path = tmp_path / "fam.csv"
    append_rows(path, [{"provider": "a", "B": 1}, {"provider": "b", "B": 2}])
    append_rows(path, [{"provider": "c", "B": 3, "unknown_column": "dropped"}])

    def worker(i):
        for j in range(5):
            append_rows(path, [{"provider": f"t{i}", "B": j}])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        body = list(reader)
    assert header == COLUMNS
    assert all(len(row) == len(COLUMNS) for row in body)
    assert len(body) == 3 + 6 * 5
    assert [r[COLUMNS.index("provider")] for r in body[:3]] == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fam.csv"]  # no temporary file left behind


def test_append_rows_refuses_a_different_header(tmp_path):
    path = tmp_path / "fam.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="header"):
        append_rows(path, [{"provider": "x"}])
    assert path.read_text() == "a,b\n1,2\n"
