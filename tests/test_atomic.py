"""spherekit._atomic and every writer built on it: files get 0o666 (folders 0o777) less the umask, the
content appears in one rename, and a failed write leaves neither the temporary nor a changed file."""

from __future__ import annotations

import os
import stat

import pytest


@pytest.fixture
def umask():
    """Set the process umask for the test (restored afterwards)."""
    saved = os.umask(0o022)
    os.umask(saved)

    def set_(mask: int) -> None:
        os.umask(mask)

    yield set_
    os.umask(saved)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _written_by_every_writer(folder) -> list:
    """Files written by each of spherekit's writers into `folder`."""
    import torch

    from spherekit.bench.results import append_rows
    from spherekit import _store
    from spherekit.evaluation.plots import plot_layer_curves
    from spherekit.evaluation.runner import write_json_atomic
    from spherekit.experiments.harness import card
    from spherekit.experiments.circumplex.cache import TokenStateCache

    paths = [
        write_json_atomic(folder / "eval" / "suite.json", {"a": 1}),
        card.write_json(folder / "card" / "results.json", {"a": 1}),
        card.write_text(folder / "card" / "report.md", "# report\n"),
        plot_layer_curves({"x": [1.0, 2.0]}, [0, 1], folder / "plots" / "curve.png"),
        _store.write_cache(folder / "cache" / "entry.pkl", [1, 2]),
    ]
    append_rows(folder / "bench" / "family.csv", [{"timestamp": "t", "status": "ok"}])
    paths.append(folder / "bench" / "family.csv")
    spec = {"texts": "x", "model": "m"}
    cache = TokenStateCache(["a"], torch.zeros(2, 3), torch.tensor([2]), spec)
    cache.save(folder / "states")
    paths += sorted((folder / "states").iterdir())
    return paths


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)], ids=["022", "027", "077"])
def test_writers_follow_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    paths = _written_by_every_writer(tmp_path)
    assert len(paths) >= 9
    assert {str(p.relative_to(tmp_path)): oct(_mode(p)) for p in paths} == \
        {str(p.relative_to(tmp_path)): oct(expected) for p in paths}
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers


def test_atomic_helpers(tmp_path, umask):
    from spherekit._atomic import atomic_dir, atomic_open, atomic_path, atomic_write_bytes, atomic_write_text

    umask(0o022)
    assert atomic_write_bytes(tmp_path / "a" / "b.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    assert atomic_write_text(tmp_path / "t.txt", "h\u00e9").read_text(encoding="utf-8") == "h\u00e9"
    with atomic_open(tmp_path / "o.txt", "w", newline="") as f:
        f.write("x\r\n")
    assert (tmp_path / "o.txt").read_bytes() == b"x\r\n"
    with atomic_path(tmp_path / "p.bin") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".p.bin.") and _mode(tmp) == 0o644
        tmp.write_bytes(b"p")
    with atomic_dir(tmp_path / "d") as tmp:
        (tmp / "f").write_text("1")
    assert _mode(tmp_path / "d") == 0o755 and (tmp_path / "d" / "f").read_text() == "1"
    for p in ("a/b.bin", "t.txt", "o.txt", "p.bin", "d/f"):
        assert _mode(tmp_path / p) == 0o644, p
    with pytest.raises(ValueError, match="mode: expected 'w' or 'wb', got 'a'"):
        with atomic_open(tmp_path / "x", "a"):
            pass


def test_failed_write_changes_nothing(tmp_path):
    from spherekit._atomic import atomic_dir, atomic_open

    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_open(target, "w") as f:
            f.write("new")
            raise RuntimeError("boom")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old").write_text("1")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "new").write_text("2")
            raise RuntimeError("boom")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["d", "keep.txt"]
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["old"]


def test_atomic_write_json_round_trips_and_keeps_scalar_lists_on_one_line(tmp_path):
    """The JSON writer of cards and evaluation results: the content is json's (values JSON cannot hold become
    str), nesting is indented by 2, and a list of scalars (per-item values) is one line."""
    import json

    from spherekit._atomic import atomic_write_json

    payload = {"units": [{"values": [0.5, 1, None, True, "a"], "empty": [], "none": {}}],
               "path": tmp_path, "nested": [[1, 2], [3]], "scalar": 1.25}
    text = atomic_write_json(tmp_path / "r.json", payload).read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(payload, default=str))
    assert '      "values": [0.5, 1, null, true, "a"],\n' in text
    assert '"empty": [],' in text and '"none": {}' in text
    assert '"nested": [\n    [1, 2],\n    [3]\n  ],' in text
    assert text.startswith('{\n  "units": [\n    {\n') and text.endswith("}\n")
