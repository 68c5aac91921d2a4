"""The supervised-contrastive benchmark: both implementations compute the same loss, the tiny preset end to end
(in-process and through benches/bench_supervised.py's command line)."""

from __future__ import annotations

import pytest
import torch

from spherekit.bench import supervised as S
from spherekit.bench.results import read_rows
from spherekit.cli import main


@pytest.mark.parametrize("loss", S.LOSSES)
def test_both_implementations_compute_the_same_loss(loss):
    task = dict(provider=f"{loss}:reference", B=32, d=8)
    e, y = S.inputs(task)
    expected = S.make_loss(task, e, y)()
    got = S.make_loss({**task, "provider": f"{loss}:spherekit-cpu"}, e, y)()
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_tiny_preset_end_to_end(tmp_path, capsys):
    assert S.run("tiny", out=tmp_path, isolate="none", progress=False) == 0
    rows = read_rows(tmp_path / "supervised.csv")
    assert len(rows) == len(S.PROVIDERS) * 2 and {r["status"] for r in rows} == {"ok"}
    assert {r["provider"] for r in rows} == set(S.PROVIDERS) and {r["family"] for r in rows} == {"supervised"}
    assert all(float(r["p20_ms"]) <= float(r["median_ms"]) <= float(r["p80_ms"]) for r in rows)
    assert "circular_cse:spherekit-cpu" in capsys.readouterr().out


def test_cli_sizes_and_width_override_the_preset(tmp_path):
    assert main(["bench", "supervised", "--preset", "tiny", "--sizes", "48", "--d", "8", "--out", str(tmp_path),
                 "--isolate", "none", "--no-progress", "--providers", "sincere:spherekit-cpu"]) == 0
    rows = read_rows(tmp_path / "supervised.csv")
    assert [(r["provider"], r["B"], r["d"]) for r in rows] == [("sincere:spherekit-cpu", "48", "8")]
    with pytest.raises(ValueError, match="unknown providers"):
        main(["bench", "supervised", "--preset", "tiny", "--providers", "nope", "--out", str(tmp_path)])
