"""Launch-configuration sweeps and a profile for a lent GPU, after scripts/gpu_check.sh has built spherekit.

    PYTHONPATH=<gpu_check work>/site python3 scripts/gpu_tune.py --out $OUT [--sections a,b] [--deadline-s S]

Sections, in order (each stops starting candidates when its share of the deadline is spent):
  profile   torch.profiler of one fwd+bwd of sentence-transformers' MNRL, the materialising reference and
            spherekit's Triton info_nce at B = N = 16,384, d = 768, bf16: the top CUDA kernels by time
  info_nce  the Triton info_nce kernels (forward, dq, dc timed apart) under candidate launch configurations at
            the GPU goal's shape, each first checked against the default configuration's output at B = N = 2,048
  chunked   the tiled-torch path (spherekit.ops._info_nce_cpu, fp32 math) on the GPU, and a bf16-product
            prototype of the same one-pass "gradients in the forward" scheme (not shipped; an upper bound)
  maxsim    the Triton MaxSim forward for the rerank goal (1 query x 10,000 documents), einsum beside it
  ngpt      the Triton geodesic residual fwd+bwd at rows = 65,536, d = 4,096, bf16
Every candidate merges its keys into the kernel module's _config() result (monkeypatched), so what is timed is
the shipped launcher. Rows go to <out>/tune.csv as they are measured (section, name, config, part, median_ms,
p20_ms, p80_ms, repeats, check, note). --rehearse runs every section on CPU through the Triton interpreter at
tiny sizes (TRITON_INTERPRET=1 must be set before the launch), to catch errors in this script without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

from spherekit.bench import quantile

FIELDS = ("section", "name", "config", "part", "median_ms", "p20_ms", "p80_ms", "repeats", "check", "note")
SECTIONS = ("profile", "info_nce", "chunked", "maxsim", "ngpt")
SHARE = dict(profile=0.08, info_nce=0.42, chunked=0.12, maxsim=0.18, ngpt=0.20)  # of the deadline

# candidates: keys merged into the default _config(); the default itself first
INFO_NCE = [
    {},
    dict(BLOCK_B=128, BLOCK_N=64, BLOCK_D=64, num_warps=8, num_stages=3),
    dict(BLOCK_B=128, BLOCK_N=128, BLOCK_D=64, num_warps=8, num_stages=3),
    dict(BLOCK_B=128, BLOCK_N=64, BLOCK_D=64, num_warps=8, num_stages=2),
    dict(BLOCK_B=64, BLOCK_N=64, BLOCK_D=64, num_warps=4, num_stages=3),
    dict(BLOCK_B=128, BLOCK_N=128, BLOCK_D=32, num_warps=8, num_stages=4),
    dict(BLOCK_B=64, BLOCK_N=128, BLOCK_D=64, num_warps=8, num_stages=3),
    dict(BLOCK_B=128, BLOCK_N=64, BLOCK_D=128, num_warps=8, num_stages=2),
    dict(BLOCK_B=64, BLOCK_N=64, BLOCK_D=128, num_warps=8, num_stages=2),
    dict(BLOCK_B=128, BLOCK_N=64, BLOCK_D=64, BLOCK_DV=128, num_warps=8, num_stages=3),
    dict(BLOCK_B=64, BLOCK_N=64, BLOCK_D=32, num_warps=4, num_stages=4),
    dict(BLOCK_B=128, BLOCK_N=64, BLOCK_D=32, num_warps=4, num_stages=4),
    dict(BLOCK_B=128, BLOCK_N=128, BLOCK_D=64, BLOCK_DV=128, num_warps=8, num_stages=3),
    dict(BLOCK_B=64, BLOCK_N=64, BLOCK_D=64, BLOCK_DV=128, num_warps=8, num_stages=3),
]
MAXSIM = [
    {},
    dict(BLOCK_N=64, BLOCK_H=32, num_warps=4, num_stages=2),
    dict(BLOCK_N=64, BLOCK_H=64, num_warps=4, num_stages=2),
    dict(BLOCK_N=64, BLOCK_H=128, num_warps=4, num_stages=1),
    dict(BLOCK_N=128, BLOCK_H=64, num_warps=4, num_stages=2),
    dict(BLOCK_N=128, BLOCK_H=128, num_warps=8, num_stages=1),
    dict(BLOCK_N=32, BLOCK_H=128, num_warps=2, num_stages=1),
    dict(BLOCK_N=64, BLOCK_H=128, num_warps=2, num_stages=1),
    dict(BLOCK_N=64, BLOCK_H=64, num_warps=2, num_stages=3),
    dict(BLOCK_N=32, BLOCK_H=64, num_warps=2, num_stages=3),
    dict(BLOCK_N=128, BLOCK_H=32, num_warps=4, num_stages=3),
    dict(BLOCK_N=256, BLOCK_H=64, num_warps=8, num_stages=2),
    dict(BLOCK_N=64, BLOCK_H=32, num_warps=8, num_stages=3),
    dict(BLOCK_N=32, BLOCK_H=32, num_warps=1, num_stages=2),
]
NGPT = [
    {},
    dict(num_warps=8),
    dict(num_warps=32),
    dict(num_warps=4),
    dict(BLOCK_R=2, num_warps=16),
    dict(BLOCK_R=2, num_warps=32),
    dict(num_stages=2),
    dict(num_warps=8, num_stages=2),
]


class Tune:
    def __init__(self, args):
        self.rehearse = args.rehearse
        self.device = "cpu" if args.rehearse else "cuda"
        self.out = Path(args.out or os.environ.get("OUT") or "results/gpu_tune")
        self.out.mkdir(parents=True, exist_ok=True)
        self.csv = self.out / "tune.csv"
        self.started = time.monotonic()
        self.deadline = self.started + args.deadline_s
        self.total = args.deadline_s
        if not self.csv.exists():
            with open(self.csv, "w", newline="") as f:
                csv.writer(f).writerow(FIELDS)

    def row(self, **kw) -> None:
        kw = {k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in kw.items()}
        with open(self.csv, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=FIELDS).writerow({k: kw.get(k, "") for k in FIELDS})
        print("  ".join(f"{k}={kw[k]}" for k in FIELDS if k in kw), flush=True)

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def time(self, fn, budget_s: float = 0.6, max_repeats: int = 25) -> tuple[float, float, float, int]:
        """(median, p20, p80 in ms, repeats) of fn after two warm-up calls; CUDA events on the GPU."""
        for _ in range(1 if self.rehearse else 2):
            fn()
        self.sync()
        times, spent = [], 0.0
        while len(times) < (1 if self.rehearse else max_repeats) and (spent < budget_s or len(times) < 5):
            if self.device == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                dt = a.elapsed_time(b)
            else:
                t0 = time.perf_counter()
                fn()
                dt = (time.perf_counter() - t0) * 1e3
            times.append(dt)
            spent += dt / 1e3
            if self.rehearse:
                break
        return quantile(times, 0.5), quantile(times, 0.2), quantile(times, 0.8), len(times)

    def left(self, section_end: float) -> bool:
        return time.monotonic() < min(section_end, self.deadline - 5)


def _unit(*shape, device, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g), dim=-1).to(device=device, dtype=dtype)


@contextlib.contextmanager
def _patched(module, override: dict):
    """module._config() with override's keys merged into its result, for the duration."""
    orig = module._config
    module._config = lambda *a, **k: {**orig(*a, **k), **override}
    try:
        yield
    finally:
        module._config = orig


def _close(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest |a - b| over the largest |b| (0 when equal)."""
    return float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))


# ------------------------------------------------------------------------------------------------ sections

def section_profile(t: Tune, end: float) -> None:
    from torch.profiler import ProfilerActivity, profile

    from spherekit import reference
    from spherekit.ops import info_nce

    B, d = (16384, 768) if not t.rehearse else (64, 32)
    dtype = torch.bfloat16 if not t.rehearse else torch.float32
    q = _unit(B, d, device=t.device, dtype=dtype, seed=0).requires_grad_()
    c = _unit(B, d, device=t.device, dtype=dtype, seed=1).requires_grad_()
    providers = {"spherekit-triton": lambda: info_nce(q, c, temperature=0.05, backend="triton" if not t.rehearse
                                                      else "cpu"),
                 "reference": lambda: reference.info_nce(q, c, temperature=0.05)}
    try:
        from sentence_transformers.sentence_transformer.losses.multiple_negatives_ranking import (
            MultipleNegativesRankingLoss,
        )
        mnrl = MultipleNegativesRankingLoss(torch.nn.Identity(), scale=20.0)
        providers["st-mnrl"] = lambda: mnrl.compute_loss_from_embeddings([q, c], None)
    except ImportError as exc:
        t.row(section="profile", name="st-mnrl", note=f"not run: {exc}")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if t.device == "cuda" else [])
    for name, fn in providers.items():
        if not t.left(end):
            break
        for _ in range(2):
            fn().backward()
            q.grad = c.grad = None
        t.sync()
        with profile(activities=activities) as prof:
            fn().backward()
            t.sync()
        q.grad = c.grad = None
        key = "device_time_total" if t.device == "cuda" else "cpu_time_total"
        events = [e for e in prof.key_averages() if getattr(e, key, 0) > 0]
        if t.device == "cuda":
            events = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA] or events
        events.sort(key=lambda e: -getattr(e, key))
        total = sum(getattr(e, key) for e in events) / 1e3
        t.row(section="profile", name=name, part="total of kernels", median_ms=total, repeats=1)
        for e in events[:8]:
            t.row(section="profile", name=name, part=e.key[:120], median_ms=getattr(e, key) / 1e3, repeats=e.count)


def section_info_nce(t: Tune, end: float) -> None:
    from spherekit.kernels import info_nce as K

    B, d = (16384, 768) if not t.rehearse else (96, 48)
    Bc = 2048 if not t.rehearse else 40
    dtype = torch.bfloat16 if not t.rehearse else torch.float32
    tau = torch.tensor(0.05, device=t.device)
    opts = dict(hn_softmax=False, bce_weight=0.0, bce_scale=20.0, bce_bias=0.0)

    def problem(n, k):
        q = _unit(n, d, device=t.device, dtype=dtype, seed=0)
        c = _unit(n, d, device=t.device, dtype=dtype, seed=1)
        h = _unit(n, k, d, device=t.device, dtype=dtype, seed=2) if k else None
        return q, c, h, torch.arange(n, device=t.device)

    def run_all(q, c, h, tgt, o):
        loss, lse = K.info_nce_fwd(q, c, tgt, h, tau, None, None, None, **o)
        g = torch.full_like(loss, 1.0 / loss.numel())
        dq, dc, dh, _ = K.info_nce_bwd(g, q, c, tgt, h, tau, None, None, None, lse, **o, need_dq=True,
                                       need_dc=True, need_dh=h is not None, need_dtau=False)
        return [x for x in (loss, dq, dc, dh) if x is not None]

    ranked = []  # (fwd + dq + dc ms, override) of the k = 0 candidates that matched the default
    for k in (0, 1):
        o = dict(opts, bce_weight=0.5 if k else 0.0)
        small = problem(Bc, k)
        big = problem(B, k)
        q, c, h, tgt = big
        expected = None
        cands = INFO_NCE if k == 0 else INFO_NCE[:1] + [best for _, best in sorted(ranked, key=lambda x: x[0])][:3]
        for override in cands:
            if not t.left(end):
                t.row(section="info_nce", name=f"k={k}", config=json.dumps(override), note="not run: section time")
                continue
            try:
                with _patched(K, override):
                    got = run_all(*small, o)
                    if expected is None:
                        expected = got
                    err = max(_close(a, b) for a, b in zip(got, expected))
                    check = "ok" if err < 2e-2 else f"DIFFERS {err:.2e}"
                    fwd = t.time(lambda: K.info_nce_fwd(q, c, tgt, h, tau, None, None, None, **o))
                    loss, lse = K.info_nce_fwd(q, c, tgt, h, tau, None, None, None, **o)
                    g = torch.full_like(loss, 1.0 / B)
                    bwd = dict(need_dq=True, need_dh=h is not None, need_dtau=False)
                    dq = t.time(lambda: K.info_nce_bwd(g, q, c, tgt, h, tau, None, None, None, lse, **o, **bwd,
                                                       need_dc=False))
                    dqdc = t.time(lambda: K.info_nce_bwd(g, q, c, tgt, h, tau, None, None, None, lse, **o, **bwd,
                                                         need_dc=True))
                cfg = json.dumps(override)
                for part, r in (("fwd", fwd), ("dq", dq), ("dq+dc", dqdc)):
                    t.row(section="info_nce", name=f"k={k} B={B} d={d} {str(dtype)[6:]}", config=cfg, part=part,
                          median_ms=r[0], p20_ms=r[1], p80_ms=r[2], repeats=r[3], check=check)
                total = fwd[0] + dqdc[0]
                t.row(section="info_nce", name=f"k={k} B={B} d={d} {str(dtype)[6:]}", config=cfg,
                      part="fwd+dq+dc", median_ms=total, check=check,
                      note=f"{4 * 2 * B * B * d / (total * 1e-3) / 1e12:.0f} TFLOP/s at 4 x 2BNd")
                if k == 0 and override and check == "ok":
                    ranked.append((total, override))
            except Exception as exc:  # a candidate that does not compile (shared memory, registers) is a row
                t.row(section="info_nce", name=f"k={k}", config=json.dumps(override),
                      note=f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
        del small, big, q, c, h, tgt
        if t.device == "cuda":
            torch.cuda.empty_cache()


def _prototype_bf16(q, c, inv_tau, chunk):
    """Mean InfoNCE and its gradients in one pass over row chunks: bf16 products with fp32 outputs where torch
    offers them (mm's out_dtype), fp32 softmax statistics. Not shipped: an upper bound for a cuBLAS path."""
    B = q.shape[0]
    dq = torch.empty_like(q)
    dc = torch.zeros(c.shape, dtype=torch.float32, device=q.device)
    loss = torch.zeros((), dtype=torch.float32, device=q.device)

    def mm(a, b):
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except (RuntimeError, TypeError):
            return torch.mm(a, b).float()

    for r0 in range(0, B, chunk):
        qr = q[r0:r0 + chunk]
        s = mm(qr, c.T).mul_(inv_tau)
        lse = torch.logsumexp(s, dim=1)
        idx = torch.arange(r0, r0 + qr.shape[0], device=q.device)
        loss += (lse - s[torch.arange(qr.shape[0], device=q.device), idx]).sum() / B
        G = s.sub_(lse[:, None]).exp_()
        G[torch.arange(qr.shape[0], device=q.device), idx] -= 1.0
        G.mul_(inv_tau / B)
        Gb = G.to(q.dtype)
        dq[r0:r0 + chunk] = mm(Gb, c).to(q.dtype)
        dc += mm(Gb.T, qr)
    return loss, dq, dc.to(c.dtype)


def section_chunked(t: Tune, end: float) -> None:
    from spherekit.ops import _info_nce_cpu as P
    from spherekit.ops import cpu_budget

    B, d = (16384, 768) if not t.rehearse else (96, 48)
    dtype = torch.bfloat16 if not t.rehearse else torch.float32
    q = _unit(B, d, device=t.device, dtype=dtype, seed=0)
    c = _unit(B, d, device=t.device, dtype=dtype, seed=1)
    tgt = torch.arange(B, device=t.device)
    tau = 0.05
    ref = None
    for chunk in ((1 << 22, 1 << 24, 1 << 26) if not t.rehearse else (1 << 10,)):
        if not t.left(end):
            break
        old = cpu_budget.CHUNK_ELEMENTS, cpu_budget.MIN_TILE_ELEMENTS
        cpu_budget.CHUNK_ELEMENTS, cpu_budget.MIN_TILE_ELEMENTS = chunk, 0
        try:
            fn = lambda: P.info_nce_fwd_bwd(q, c, tgt, None, tau, None, None, None, hn_softmax=False,  # noqa: E731
                                            bce_weight=0.0, bce_scale=20.0, bce_bias=0.0, reduction="mean",
                                            need_dq=True, need_dc=True, need_dh=False, need_dtau=False)
            ref = fn() if ref is None else ref
            r = t.time(fn)
            t.row(section="chunked", name=f"tiled torch fp32 B={B} d={d}", config=json.dumps({"CHUNK_ELEMENTS": chunk}),
                  part="fwd+bwd (one pass)", median_ms=r[0], p20_ms=r[1], p80_ms=r[2], repeats=r[3],
                  note=f"{4 * 2 * B * B * d / (r[0] * 1e-3) / 1e12:.0f} TFLOP/s at 4 x 2BNd (3 products done)")
        finally:
            cpu_budget.CHUNK_ELEMENTS, cpu_budget.MIN_TILE_ELEMENTS = old
    for rows in ((512, 1024, 2048, 4096) if not t.rehearse else (32,)):
        if not t.left(end):
            break
        got = _prototype_bf16(q, c, 1 / tau, rows)
        err = max(_close(got[0], ref[0]), _close(got[1], ref[1]), _close(got[2], ref[2])) if ref else float("nan")
        r = t.time(lambda: _prototype_bf16(q, c, 1 / tau, rows))
        t.row(section="chunked", name=f"prototype bf16 products B={B} d={d}", config=json.dumps(dict(rows=rows)),
              part="fwd+bwd (one pass)", median_ms=r[0], p20_ms=r[1], p80_ms=r[2], repeats=r[3],
              check="ok" if err < 3e-2 else f"DIFFERS {err:.2e}",
              note=f"{4 * 2 * B * B * d / (r[0] * 1e-3) / 1e12:.0f} TFLOP/s at 4 x 2BNd (3 products done)")


def section_maxsim(t: Tune, end: float) -> None:
    from spherekit.kernels import maxsim as K

    k, m, n, h = (10000, 32, 180, 128) if not t.rehearse else (20, 8, 12, 16)
    dtype = torch.bfloat16 if not t.rehearse else torch.float32
    q = _unit(1, m, h, device=t.device, dtype=dtype, seed=0)
    d = _unit(1, k, n, h, device=t.device, dtype=dtype, seed=1)
    r = t.time(lambda: torch.einsum("ash,bkth->bkst", q, d).amax(-1).mean(-1))
    t.row(section="maxsim", name=f"rerank k={k} m={m} n={n} h={h}", config="einsum", part="fwd", median_ms=r[0],
          p20_ms=r[1], p80_ms=r[2], repeats=r[3], note="einsum, amax, mean: the baseline")
    expected = None
    for override in MAXSIM:
        if not t.left(end):
            t.row(section="maxsim", name="rerank", config=json.dumps(override), note="not run: section time")
            continue
        try:
            with _patched(K, override):
                fn = lambda: K._forward(q, None, d, None, True, None, False)[0]  # noqa: E731
                got = fn()
                expected = got if expected is None else expected
                err = _close(got, expected)
                r = t.time(fn)
            t.row(section="maxsim", name=f"rerank k={k} m={m} n={n} h={h}", config=json.dumps(override), part="fwd",
                  median_ms=r[0], p20_ms=r[1], p80_ms=r[2], repeats=r[3],
                  check="ok" if err < 1e-2 else f"DIFFERS {err:.2e}",
                  note=f"{k * n * h * d.element_size() / (r[0] * 1e-3) / 1e9:.0f} GB/s of documents read")
        except Exception as exc:
            t.row(section="maxsim", name="rerank", config=json.dumps(override),
                  note=f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")


def section_ngpt(t: Tune, end: float) -> None:
    from spherekit.kernels import ngpt as K
    from spherekit.ops import geodesic_residual

    rows, d = (65536, 4096) if not t.rehearse else (16, 64)
    dtype = torch.bfloat16 if not t.rehearse else torch.float32
    g = torch.Generator().manual_seed(0)
    hh, f, grad = (torch.randn(rows, d, generator=g).to(device=t.device, dtype=dtype) for _ in range(3))
    alpha = (torch.randn(d, generator=g) * 0.05).to(t.device)
    hh.requires_grad_(), f.requires_grad_(), alpha.requires_grad_()

    def step():
        geodesic_residual(hh, f, alpha, backend="triton").backward(grad)
        return hh.grad, f.grad, alpha.grad

    expected = None
    for override in NGPT:
        if not t.left(end):
            t.row(section="ngpt", name="fwd+bwd", config=json.dumps(override), note="not run: section time")
            continue
        try:
            with _patched(K, override):
                got = [x.clone() for x in step()]
                hh.grad = f.grad = alpha.grad = None
                expected = got if expected is None else expected
                err = max(_close(a, b) for a, b in zip(got, expected))

                def timed():
                    step()
                    hh.grad = f.grad = alpha.grad = None
                r = t.time(timed)
            t.row(section="ngpt", name=f"fwd+bwd rows={rows} d={d}", config=json.dumps(override), part="fwd+bwd",
                  median_ms=r[0], p20_ms=r[1], p80_ms=r[2], repeats=r[3],
                  check="ok" if err < 2e-2 else f"DIFFERS {err:.2e}")
        except Exception as exc:
            t.row(section="ngpt", name="fwd+bwd", config=json.dumps(override),
                  note=f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (default: $OUT, else results/gpu_tune)")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--deadline-s", type=float, default=300.0)
    ap.add_argument("--rehearse", action="store_true", help="CPU, the Triton interpreter, tiny sizes")
    args = ap.parse_args(argv)
    if args.rehearse and os.environ.get("TRITON_INTERPRET") != "1":
        ap.error("--rehearse needs TRITON_INTERPRET=1 in the environment")
    if not args.rehearse and not torch.cuda.is_available():
        ap.error("no CUDA device: use --rehearse")
    t = Tune(args)
    wanted = args.sections.split(",")
    todo = [s for s in SECTIONS if s in wanted]
    for i, name in enumerate(todo):
        share = SHARE[name] / sum(SHARE[s] for s in todo[i:])  # of the time left: unspent time carries over
        end = time.monotonic() + share * (t.deadline - time.monotonic())
        print(f"[gpu_tune] {name} ({end - time.monotonic():.0f} s)", flush=True)
        try:
            globals()[f"section_{name}"](t, end)
        except Exception:
            traceback.print_exc()
            t.row(section=name, note=f"error: {traceback.format_exc().splitlines()[-1][:200]}")
        if t.device == "cuda":
            torch.cuda.empty_cache()
    print(f"[gpu_tune] done in {time.monotonic() - t.started:.0f} s: {t.csv}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
