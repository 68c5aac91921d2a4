"""`spherekit bench reproduce compositional --preset tiny` (spherekit.experiments.compositional.bench): every
(verifier, regime, provider) at the preset's batch plus the largest-batch row, the CSV, and the speed-up summary;
the released loop and spherekit's all-pairs step optimise the same loss (equal first-step losses on the same weights
and inputs)."""

import csv

import pytest
import torch

from spherekit.experiments.compositional import bench as RC
from spherekit.cli import main


def test_tiny_bench_rows_and_csv(tmp_path, one_thread):
    assert main(["bench", "reproduce", "compositional", "--preset", "tiny", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "reproduce_compositional.csv").open()))
    assert len(rows) == 2 * 2 * 3 * 2  # verifiers x regimes x providers x (batch 4, largest batch)
    assert {r["provider"] for r in rows} == {"released", "spherekit", "spherekit-chunked"}
    for r in rows:
        assert r["status"] == "ok" and float(r["samples_per_s"]) > 0 and float(r["peak_extra_mib"]) >= 0
    largest = [r for r in rows if "largest batch" in r["note"]]
    assert len(largest) == 12 and all(int(r["B"]) == 8 for r in largest)
    lines = RC.summarize([{**r, "B": int(r["B"]), "samples_per_s": float(r["samples_per_s"])} for r in rows])
    assert any(line.startswith("F4 e2e B=4: spherekit / released samples/s") for line in lines)
    assert any(line.startswith("F4 frozen: largest batch spherekit-chunked 8 vs released 8") for line in lines)


@pytest.mark.parametrize("name,chunk_rows", [("F3", None), ("F3", 2), ("F4", None), ("F4", 2)])
def test_released_and_spherekit_losses_agree(name, chunk_rows, one_thread):
    from spherekit.losses.verifier_mnrl import verifier_mnrl_loss

    p = RC.PRESETS["tiny"]
    ours, released = RC._verifiers(name, p)
    ours.eval(), released.eval()
    g = torch.Generator().manual_seed(0)
    q, pos, neg = (torch.randn(3, n, 32, generator=g) for n in (5, 7, 6))
    qm, pm, nm = (torch.ones(3, n, dtype=torch.bool) for n in (5, 7, 6))
    qm[0, 3:] = False
    a = verifier_mnrl_loss(ours, q, qm, pos, pm, neg[:, None], nm[:, None], scale=10.0, chunk_rows=chunk_rows)
    b = RC._released_loss(released, q, qm, pos, pm, neg, nm)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
