"""The `spherekit` command (also `python -m spherekit`): argument parsing and dispatch only.

    spherekit info
    spherekit bench contrastive --preset cpu-small [--out benches/results] [--repeats N] [--providers a,b]
    spherekit bench plot contrastive [--out benches/results]
"""

from __future__ import annotations

import argparse

FAMILIES = ("contrastive",)


def _parser() -> argparse.ArgumentParser:
    from .bench import contrastive

    parser = argparse.ArgumentParser(prog="spherekit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, compiled extensions and usable backends")

    bench = sub.add_parser("bench", help="benchmarks (rows appended to <out>/<family>.csv)")
    bsub = bench.add_subparsers(dest="family", required=True)
    c = bsub.add_parser("contrastive", help="InfoNCE / MNRL providers side by side",
                        description=contrastive.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--preset", default="cpu-small", choices=sorted(contrastive.PRESETS))
    c.add_argument("--out", default="benches/results", help="folder of the CSV and PNGs (default: %(default)s)")
    c.add_argument("--repeats", type=int, help="timed calls per measurement (default: the preset's)")
    c.add_argument("--providers", type=lambda s: [p for p in s.split(",") if p],
                   help=f"comma-separated subset of {','.join(contrastive.PROVIDERS)}")
    c.add_argument("--isolate", default="provider", choices=("provider", "task", "none"),
                   help="fresh worker process per provider (default), per measurement, or none")
    c.add_argument("--mem-limit-gib", type=float,
                   help="skip (predicted) or kill (measured RSS) above this; CPU default 20 GiB or 90%% of free")
    c.add_argument("--budget-s", type=float, help="time budget of the timed calls per measurement")
    c.add_argument("--timeout-s", type=float, default=1800.0, help="kill a measurement after this long")
    c.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16 peak, for the throughput goal")
    c.add_argument("--no-plot", action="store_true", help="do not write the PNGs")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = bsub.add_parser("plot", help="PNGs from <out>/<family>.csv")
    p.add_argument("what", choices=FAMILIES)
    p.add_argument("--out", default="benches/results")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "info":
        from . import info

        info()
        return 0
    if args.family == "plot":
        from .bench import plot

        paths = plot.plot(args.what, args.out)
        for path in paths:
            print(f"plot: {path}")
        return 0 if paths else 1
    from .bench import contrastive

    return contrastive.run(
        preset=args.preset, out=args.out, repeats=args.repeats, providers=args.providers, isolate=args.isolate,
        mem_limit_gib=args.mem_limit_gib, budget_s=args.budget_s, timeout_s=args.timeout_s,
        peak_tflops=args.peak_tflops, plot=not args.no_plot, progress=not args.no_progress,
    )


if __name__ == "__main__":
    raise SystemExit(main())
