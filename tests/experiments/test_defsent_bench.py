"""`spherekit bench reproduce defsent`: both heads compute eq. 1 (value and gradient), and the tiny preset writes
one row per (E, B, mode, provider) plus the bank build."""

import pytest
import torch

from spherekit.experiments.defsent.bench import linear_head_loss, run, spherekit_loss
from spherekit.bench.results import read_rows


def test_both_heads_are_eq1():
    g = torch.Generator().manual_seed(0)
    bank = torch.randn(301, 16, generator=g)
    labels = torch.randint(0, 301, (7,), generator=g)
    h1 = torch.randn(7, 16, generator=g, requires_grad=True)
    h2 = h1.detach().clone().requires_grad_()
    a, b = spherekit_loss(h1, bank, labels), linear_head_loss(h2, bank, labels)
    a.backward()
    b.backward()
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h1.grad, h2.grad, atol=1e-5, rtol=1e-5)


def test_tiny_preset_rows(backbone_dir, tmp_path):
    assert run("tiny", out=str(tmp_path), backbone=str(backbone_dir)) == 0
    rows = read_rows(tmp_path / "reproduce_defsent.csv")
    assert len(rows) == 1 + 2 * 2 * 2 * 2
    assert rows[0]["mode"] == "bank-build" and float(rows[0]["definitions_per_s"]) > 0
    for r in rows[1:]:
        assert r["status"] == "ok" and float(r["median_ms"]) > 0 and float(r["peak_extra_mib"]) >= 0
        assert r["E"] in ("1000", "3000") and r["B"] in ("4", "8") and r["provider"] in ("spherekit", "linear-head")
    with pytest.raises(ValueError, match="valid presets"):
        run("huge", out=str(tmp_path))
    with pytest.raises(ValueError, match="needs --backbone"):
        run("tiny", out=str(tmp_path))
