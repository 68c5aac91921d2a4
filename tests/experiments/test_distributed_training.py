"""Data parallelism through the shared training path: 2 gloo processes on the CPU (torchrun) with half the batch
each and the losses' gather_across_devices give the loss curve of one process with the whole batch."""

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("_dist_train.py")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env_extra or {})}
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    # its own session, so a timeout kills torchrun's ranks too (a hung rank would otherwise outlive the test)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"timed out after {TIMEOUT_S} s (every rank killed):\n{stdout[-3000:]}{stderr[-5000:]}")
    assert proc.returncode == 0, stdout[-3000:] + stderr[-5000:]


@pytest.mark.distributed
def test_two_gloo_processes_match_one_process(backbone_dir, tmp_path):
    run([sys.executable, str(SCRIPT), str(backbone_dir), str(tmp_path / "one"), "8"])
    run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(free_port()), str(SCRIPT), str(backbone_dir), str(tmp_path / "two"), "8"])
    one = json.loads((tmp_path / "one" / "curve.json").read_text())
    two = json.loads((tmp_path / "two" / "curve.json").read_text())
    assert one["step"] == two["step"] == [1, 2, 3, 4]
    assert one["loss"][0] != pytest.approx(one["loss"][-1], abs=1e-3)  # it trained
    for key in ("loss", "one", "two"):
        assert two[key] == pytest.approx(one[key], rel=2e-3, abs=2e-3), key


@pytest.mark.distributed
def test_reproduce_under_torchrun(backbone_dir, tmp_path):
    """`torchrun -m spherekit reproduce ...`: both ranks train, rank 0 evaluates and writes the card."""
    out = tmp_path / "out"
    run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(free_port()), "-m", "spherekit", "reproduce", "concept", "--preset", "tiny",
         "--backbone", str(backbone_dir), "--conditions", "B0,B1", "--out", str(out), "--no-progress"])
    card = out / "concept" / "tiny"
    results = json.loads((card / "results.json").read_text())
    assert set(results["units"]) == {"st/B0", "st/B1"}
    b1 = results["units"]["st/B1"]
    assert b1["runs"][0]["training"]["encoder"]["steps"] == 3 and "in-domain/R@10 (term to definition)" in b1["metrics"]
    assert results["data"]["rows"] == 3 * 4 * 2  # steps x per-device batch x 2 processes
    assert (card / "st" / "B1" / "seed-0" / "done").is_file() and (card / "report.md").is_file()
