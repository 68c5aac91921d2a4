"""gather_across_devices under torch.distributed: 2 CPU processes (gloo), each with half of a batch.

sentence-transformers defines the gathered loss per process as the mean over ITS anchors, scored
against the documents of all processes; the backward of the gather sends every process the sum over
processes of the gradients for its rows. So, with the full-batch single-process loss L (mean over
all anchors) and W processes of equal batch size:

    mean over ranks of loss_r == L,     d loss_r / d x_local (after the gather's backward) == W * dL/dx_local

(DDP then averages parameter gradients over ranks, giving exactly dL/dtheta.) Checked for spherekit's
losses, for sentence-transformers' own MNRL, and spherekit == sentence-transformers rank by rank.
"""

from __future__ import annotations

import socket

import pytest
import torch
import torch.multiprocessing as mp

from tests.losses._dist_worker import CASES, LOCAL_BATCH, full_batch, loss_and_grads, make_losses, worker

WORLD = 2
ATOL, RTOL = 1e-5, 1e-5


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("gloo")
    files = [out / f"rank{r}.pt" for r in range(WORLD)]
    try:
        mp.spawn(worker, args=(WORLD, free_port(), str(out)), nprocs=WORLD, join=True)
    except mp.ProcessExitedException:
        # a rank that dies after both ranks saved their results (and passed the barrier) died in gloo's
        # teardown, not in the computation under test; anything earlier is a failure
        if not all(f.exists() for f in files):
            raise
    return [torch.load(f) for f in files]


@pytest.mark.distributed
@pytest.mark.parametrize("name", list(CASES))
def test_gathered_equals_full_batch(name, rank_results):
    full = full_batch(name, WORLD)
    for tag, single in make_losses(name, gather=False).items():
        loss_full, grads_full = loss_and_grads(single, full)
        losses = torch.stack([rank_results[r][(name, tag)][0] for r in range(WORLD)])
        torch.testing.assert_close(losses.mean(), loss_full, atol=ATOL, rtol=RTOL)
        for r in range(WORLD):
            rows = slice(r * LOCAL_BATCH, (r + 1) * LOCAL_BATCH)
            for i, (got, want) in enumerate(zip(rank_results[r][(name, tag)][1], grads_full)):
                torch.testing.assert_close(got, WORLD * want[rows], atol=ATOL, rtol=RTOL,
                                           msg=lambda m: f"{tag} rank {r} column {i}: {m}")


@pytest.mark.distributed
@pytest.mark.parametrize("name", [n for n, (kind, _, _) in CASES.items() if kind == "mnrl"])
def test_gathered_equals_sentence_transformers(name, rank_results):
    for r in range(WORLD):
        ours, st = rank_results[r][(name, "ours")], rank_results[r][(name, "st")]
        torch.testing.assert_close(ours[0], st[0], atol=ATOL, rtol=RTOL)
        for got, want in zip(ours[1], st[1]):
            torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)
