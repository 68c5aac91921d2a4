"""A stand-in benchmark family for the harness tests (imported by name, also inside worker processes).

Task fields: provider, mode, B, N, d, k, dtype as in a real family, plus "action":
    "ok"        return a fixed result
    "memory"    raise MemoryError                    -> status oom
    "cuda-oom"  raise RuntimeError("CUDA out of memory")  -> status oom
    "bug"       raise ValueError                     -> status error
    "grow"      touch memory until killed (the parent's RSS watchdog)   -> status oom
    "sleep"     sleep until killed (the parent's timeout)                -> status timeout
    "predict"   predict_bytes says 1 TiB             -> status skipped (before any run)
"""

import time

PROVIDERS = ("fake",)


def static_skip(task, settings):
    return "static reason" if task.get("action") == "static" else None


def predict_bytes(task):
    return 1 << 40 if task.get("action") == "predict" else None


def run_task(task, settings):
    action = task.get("action", "ok")
    if action == "memory":
        raise MemoryError("simulated")
    if action == "cuda-oom":
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    if action == "bug":
        raise ValueError("simulated bug")
    if action == "grow":
        blocks = []
        for _ in range(64):  # up to 2 GiB, 32 MiB at a time, every page touched
            b = bytearray(32 << 20)
            b[::4096] = b"\1" * len(range(0, len(b), 4096))
            blocks.append(b)
            time.sleep(0.02)
        return {"status": "ok", "note": "never killed"}
    if action == "sleep":
        time.sleep(60)
    return {"median_ms": 1.0, "p20_ms": 0.9, "p80_ms": 1.1, "peak_extra_mib": 0.5, "repeats": 1, "status": "ok",
            "note": ""}
