"""The F4 training-throughput benchmark: both providers compute the same loss; the batch search stops at
the first failure; rows land in the CSV with samples/s."""

import pytest
import torch

from spherekit.bench import verifier_throughput as V
from spherekit.reference.paper_verifier import PaperStyleF4, paper_mnrl_loss
from spherekit.bench.results import read_rows
from spherekit.losses import verifier_mnrl_loss
from spherekit.nn import PatchTransformerVerifier


def test_both_providers_compute_the_same_loss():
    torch.manual_seed(0)
    v = PatchTransformerVerifier(**V.F4_CONFIGS["tiny"]).eval()
    paper = PaperStyleF4.from_verifier(v).eval()
    g = torch.Generator().manual_seed(1)
    q, p, n = (torch.randn(3, L, 8, generator=g) for L in (5, 9, 7))
    qm, pm, nm = (torch.arange(x.shape[1])[None] < torch.tensor([[x.shape[1]], [2], [3]]) for x in (q, p, n))
    ours = verifier_mnrl_loss(v, q, qm, p, pm, n[:, None], nm[:, None], scale=V.SCALE)
    theirs = paper_mnrl_loss(paper, q, qm, p, pm, n, nm, scale=V.SCALE)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_tiny_preset_runs_and_writes_rows(tmp_path, one_thread):
    rows = V.run("tiny", out=tmp_path, max_batch=2, isolate="none")
    assert [(r["provider"], r["B"], r["status"]) for r in rows] == [("paper", 2, "ok"), ("spherekit", 2, "ok")]
    assert all(V.samples_per_s(r) > 0 for r in rows)
    saved = read_rows(tmp_path / "verifier_train.csv")
    assert [(r["provider"], r["mode"], r["candidates"], r["near_misses"]) for r in saved] == \
        [("paper", "train-e2e", "3", "1"), ("spherekit", "train-e2e", "3", "1")]
    lines = V.summarize(rows)
    assert any(line.startswith("paper") and "largest batch     2" in line for line in lines)
    assert any(line.startswith("B=    2: spherekit") for line in lines)


def test_batch_search_stops_at_the_first_failure(tmp_path, monkeypatch):
    calls = []

    def fake_run_task(task, settings):
        calls.append((task["provider"], task["B"]))
        if task["provider"] == "paper" and task["B"] >= 8:
            return {"status": "oom", "note": "fake"}
        return {"median_ms": 1000.0, "p20_ms": 1000.0, "p80_ms": 1000.0, "peak_extra_mib": 1.0, "repeats": 1,
                "status": "ok", "note": f"samples_per_s={task['B']:.1f}"}

    monkeypatch.setattr(V, "run_task", fake_run_task)
    rows = V.run("tiny", out=tmp_path, max_batch=32, isolate="none")
    assert calls == [("paper", 2), ("paper", 4), ("paper", 8),
                     ("spherekit", 2), ("spherekit", 4), ("spherekit", 8), ("spherekit", 16), ("spherekit", 32)]
    lines = V.summarize(rows)
    assert "largest batch     4" in lines[0] and "B=8: oom" in lines[0]
    assert "largest batch    32" in lines[1]
    with pytest.raises(ValueError, match="unknown providers"):
        V.run("tiny", out=tmp_path, providers=["nope"])
