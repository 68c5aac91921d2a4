"""The benchmark harness: quantiles, measurements, OOM / skip / timeout handling."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from spherekit.bench import _harness as H
from spherekit.bench import contrastive as C
from spherekit.bench.machine import DEFAULT_CPU_MEM_LIMIT

HERE = Path(__file__).resolve().parent
FAKE = "_fake_family"
LINUX = sys.platform.startswith("linux")


def _task(action="ok", B=8):
    return dict(family="fake", provider="fake", mode="fwd", B=B, N=B, d=4, k=0, dtype="float32", action=action)


def _collect(tasks, **settings):
    out = []
    H.run_tasks(FAKE, tasks, H.Settings(**settings), lambda t, r: out.append((t, r)), progress=False)
    return out


@pytest.fixture(autouse=True)
def _fake_family_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


def test_quantile_matches_numpy():
    xs = [5.0, 1.0, 4.0, 2.5, 9.0, 3.0, 7.5]
    for q in (0.0, 0.2, 0.5, 0.8, 1.0):
        assert H.quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))
    assert H.quantile([3.0], 0.8) == 3.0


def test_measure_reports_quantiles_and_memory():
    calls = []
    settings = H.Settings(repeats=4, warmup=2, min_repeats=1, budget_s=10.0)
    def step():  # over 1 ms: the sub-ms rule (SUB_MS_REPEATS) does not apply
        calls.append(1)
        time.sleep(0.002)
        return torch.zeros(1 << 20)  # 4 MiB per call

    result = H.measure(step, settings)
    assert len(calls) == 2 + 4 + 1  # warmup, timed, memory probe
    assert result["status"] == "ok" and result["repeats"] == 4
    assert result["p20_ms"] <= result["median_ms"] <= result["p80_ms"]
    if LINUX:
        assert 3.5 <= result["peak_extra_mib"] <= 12


def test_failures_become_statuses_in_process():
    results = _collect([_task("ok"), _task("memory"), _task("cuda-oom"), _task("bug"), _task("predict"),
                        _task("static")], isolate="none", mem_limit_bytes=1 << 30)
    statuses = [(t["action"], r["status"]) for t, r in results]
    assert sorted(statuses) == sorted([("ok", "ok"), ("memory", "oom"), ("cuda-oom", "oom"), ("bug", "error"),
                                       ("predict", "skipped"), ("static", "skipped")])
    notes = {t["action"]: r["note"] for t, r in results}
    assert "predicted 1024.0 GiB > mem limit 1.0 GiB" in notes["predict"]
    assert "ValueError: simulated bug" in notes["bug"]


@pytest.mark.skipif(not LINUX, reason="the RSS watchdog reads /proc")
def test_worker_killed_by_memory_limit_and_timeout_then_replaced():
    tasks = [_task("ok", 1), _task("grow", 2), _task("ok", 3), _task("sleep", 4), _task("bug", 5)]
    # a worker imports torch (via the spherekit package): a few hundred MiB before any task
    # 15 s: the "grow" task must reach the memory limit before the timeout even on a loaded 2-core machine
    results = _collect(tasks, isolate="provider", mem_limit_bytes=1 << 30, timeout_s=15.0)
    got = {t["B"]: r for t, r in results}
    assert [got[b]["status"] for b in range(1, 6)] == ["ok", "oom", "ok", "timeout", "error"]
    assert "mem limit" in got[2]["note"] and "timeout" in got[4]["note"]


def test_tiny_memory_limit_skips_the_contrastive_providers():
    tasks = C.build_tasks(C.PRESETS["tiny"], ["reference", "spherekit-cpu"])
    results = []
    H.run_tasks(C.MODULE, tasks, H.Settings(isolate="none", mem_limit_bytes=1 << 20),
                lambda t, r: results.append(r), progress=False)
    assert len(results) == len(tasks) and {r["status"] for r in results} == {"skipped"}
    assert all("predicted" in r["note"] for r in results)


def test_contrastive_tasks_and_predictions():
    tasks = C.build_tasks(C.PRESETS["cpu-goal"])
    assert {t["provider"] for t in tasks} == {"reference", "spherekit-cpu", "st-mnrl", "st-cached-mnrl", "torch-ce",
                                              "torch-ce-compile"}
    big = {t["provider"]: C.predict_bytes(t) for t in tasks if t["B"] == 65536 and t["mode"] == "fwd+bwd"}
    limit = DEFAULT_CPU_MEM_LIMIT
    assert big["reference"] > limit and big["spherekit-cpu"] < limit // 8
    st = [t for t in C.build_tasks(C.PRESETS["tiny"]) if t["provider"] == "st-mnrl" and t["k"] == 1]
    assert all(t["N"] == 2 * t["B"] for t in st)


def test_background_load_spins_for_its_duration_and_stops():
    """--background-load N: N spinning processes exist inside the block (the 1-minute load is too slow to check),
    none after it, and every emitted row's note says so."""
    import multiprocessing

    before = len(multiprocessing.active_children())
    with H.background_load(2):
        assert len(multiprocessing.active_children()) == before + 2
    assert len(multiprocessing.active_children()) == before
    rows = []
    H.noting(lambda task, result: rows.append(result), H.load_note(2))({}, {"note": "x"})
    assert rows == [{"note": "x; background load: 2 spinning processes"}]
    with pytest.raises(ValueError, match="background_load"):
        with H.background_load(-1):
            pass


def test_plain_cross_entropy_providers_match_the_reference_at_k0():
    """torch-ce and torch-ce-compile compute the same loss as the reference without hard negatives, and skip k > 0."""
    import torch

    task = dict(family=C.FAMILY, provider="torch-ce", mode="fwd", B=32, N=32, d=16, k=0, dtype="float32")
    q, c, h = C._inputs(task, "cpu")
    plain = C._make_loss(task, q, c, h)[0]()
    ref = C._make_loss(dict(task, provider="reference"), q, c, h)[0]()
    assert torch.allclose(plain, ref, atol=1e-5)
    assert C.static_skip(dict(task, k=1), H.Settings()) is not None
