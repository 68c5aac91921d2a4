"""Benchmarks that run one measurement per fresh worker process (`python -m <module> --worker SPEC.json`), with
the result printed on one marked stdout line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RESULT_MARKER = "@@SPHEREKIT-REPRODUCE-BENCH "


def spawn_worker(module: str, spec: dict, timeout_s: float, marker: str = RESULT_MARKER) -> dict:
    """Run `python -m <module> --worker <spec.json>` in a fresh process; its result is the JSON on the stdout
    line starting with `marker` ({"status": "ok", ...}), else {"status": "error" | "timeout", "note": ...}."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(spec, fh)
    try:
        proc = subprocess.run([sys.executable, "-m", module, "--worker", fh.name], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "note": f"killed after {timeout_s:.0f} s"}
    finally:
        os.unlink(fh.name)
    for line in proc.stdout.splitlines():
        if line.startswith(marker):
            return {"status": "ok", **json.loads(line[len(marker):])}
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"status": "error", "note": " | ".join(tail)[-300:]}


def worker_main(worker, argv, main, marker: str = RESULT_MARKER) -> int:
    """The `python -m` entry of a benchmark module: `--worker SPEC` runs `worker` and prints its result line."""
    if len(argv) == 2 and argv[0] == "--worker":
        result = worker(json.loads(Path(argv[1]).read_text()))
        print(marker + json.dumps(result), flush=True)
        return 0
    return main()
