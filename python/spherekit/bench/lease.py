"""The bench presets of a GPU lease, sized before the lease: how long each family's `gpu-lease` preset may take.

scripts/gpu_check.sh gives each bench family one step with its own time limit (STEP_LIMIT_S); its --rehearse fails
when a family's predicted worst case passes that limit, so a grid that grew never meets the limit on the GPU.

The prediction is an upper bound built from assumptions, never from a measurement (no GPU number here): a worker
process per provider (per batch for verifier_train) costs WORKER_S (interpreter, torch, CUDA context); the first
measurement of a torch.compile provider COMPILE_S and of a Triton provider TRITON_S (kernels compile on first use);
each measurement at most its first (compiling) call, its warm-ups (at least the harness's GPU_WARMUPS), its timed
calls (the preset's repeats, cut to its budget_s but never fewer than min_repeats) and one memory probe, plus its
back-to-back calls (sim_map's rerank rows), each call CALL_S[family] at worst (the slowest provider at the preset's
largest shape, on the slow side for an H100); a ceiling row ("peak" provider) PEAK_CALL_S and a rerank row
RERANK_CALL_S per call.
"""

from __future__ import annotations

import importlib

PRESET = "gpu-lease"
FAMILIES = {  # family -> its module under spherekit.bench
    "contrastive": "contrastive", "sim_map": "sim_map", "ngpt": "ngpt", "verifier_train": "verifier_throughput"}
STEP_LIMIT_S = {"contrastive": 120, "sim_map": 80, "ngpt": 150, "verifier_train": 100}
WORKER_S = 10.0
COMPILE_S = 45.0
TRITON_S = 8.0
CALL_S = {"contrastive": 0.25, "sim_map": 0.2, "ngpt": 0.1, "verifier_train": 1.5}
PEAK_CALL_S = 0.01  # a 1 GiB copy or triad, an 8,192^3 bf16 product: about 1 ms on an H100
RERANK_CALL_S = 0.02  # sim_map's rerank of 10,000 documents: about 1 ms on an H200 (the einsum, the ragged kernel)


def module(family: str):
    return importlib.import_module(f"spherekit.bench.{FAMILIES[family]}")


def _measurement_s(preset, call_s: float, back_to_back: int = 0) -> float:
    from ._harness import GPU_WARMUPS

    timed = max(min(preset.repeats * call_s, preset.budget_s), preset.min_repeats * call_s)
    return (1 + max(GPU_WARMUPS, preset.warmup) + 1 + back_to_back) * call_s + timed


def plan(family: str, preset_name: str = PRESET) -> dict:
    """{measurements, workers, compiles, seconds (the upper bound), limit_s} of a family's preset."""
    mod = module(family)
    preset = mod.PRESETS[preset_name]
    call = CALL_S[family]
    if family == "verifier_train":
        batches, b = [], preset.start_batch
        while b <= preset.max_batch:
            batches.append(b)
            b *= 2
        n = workers = len(mod.PROVIDERS) * len(batches)
        compiles, first_use = 0, 0
    else:
        tasks = mod.build_tasks(preset)
        n = len(tasks)
        providers = {t["provider"] for t in tasks}
        workers = len(providers)
        compiles = sum(1 for t in tasks if "compile" in t["provider"])
        first_use = sum(1 for p in providers if "triton" in p or "cuda" in p)
        b2b = getattr(mod, "BACK_TO_BACK", 0)
        measured = sum(_measurement_s(preset, PEAK_CALL_S) if t["provider"] == "peak" else
                       _measurement_s(preset, RERANK_CALL_S, b2b) if t.get("workload") == "rerank" else
                       _measurement_s(preset, call) for t in tasks)
    if family == "verifier_train":
        measured = n * _measurement_s(preset, call)
    seconds = workers * WORKER_S + compiles * COMPILE_S + first_use * TRITON_S + measured
    return dict(family=family, preset=preset_name, measurements=n, workers=workers, compiles=compiles,
                seconds=round(seconds), limit_s=STEP_LIMIT_S[family])


def check(preset_name: str = PRESET) -> list[str]:
    """One line per family; a line starting with 'FAIL' when the bound passes the step's limit."""
    out = []
    for family in FAMILIES:
        p = plan(family, preset_name)
        verdict = "ok  " if p["seconds"] <= p["limit_s"] else "FAIL"
        out.append(f"{verdict} {family:<15} {p['measurements']:>3} measurements, {p['workers']:>2} workers, "
                   f"{p['compiles']} compiles: <= {p['seconds']:>4} s predicted (step limit {p['limit_s']} s)")
    return out


if __name__ == "__main__":
    lines = check()
    print("\n".join(lines))
    raise SystemExit(1 if any(line.startswith("FAIL") for line in lines) else 0)
