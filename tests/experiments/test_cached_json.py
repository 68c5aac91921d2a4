"""experiments.card.cached_json: build once, reuse under the same key, rebuild (and overwrite) under another."""

import json

from spherekit.experiments.harness.card import cached_json


def test_builds_once_and_rebuilds_when_the_key_changes(tmp_path):
    path = tmp_path / "data" / "x.json"
    calls = []

    def build(value):
        def run():
            calls.append(value)
            return {"value": value}
        return run

    assert cached_json(path, "k1", build(1)) == {"value": 1}
    assert cached_json(path, "k1", build(2)) == {"value": 1}  # same key: read back, not rebuilt
    assert calls == [1]
    assert cached_json(path, "k2", build(3)) == {"value": 3}  # other settings: rebuilt and saved
    assert calls == [1, 3]
    assert json.loads(path.read_text()) == {"key": "k2", "data": {"value": 3}}
