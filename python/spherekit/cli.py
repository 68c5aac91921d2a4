"""The `spherekit` command (also `python -m spherekit`): argument parsing and dispatch only.

    spherekit info
    spherekit bench contrastive --preset cpu-small [--out benches/results] [--repeats N] [--providers a,b]
    spherekit bench plot contrastive [--out benches/results]
    spherekit bench verifier-train --preset tiny|cpu-small|gpu|gpu-paper-f4 [--mem-limit-gib G] [--providers a,b]
    spherekit bench reproduce concept --preset cpu-small|gpu|tiny [--steps N] [--backbone B]
    spherekit bench reproduce circumplex --preset cpu-small|gpu|tiny [--backbone B]
    spherekit bench simmap --preset tiny|cpu|gpu [--out benches/results] [--providers a,b]
    spherekit bench ngpt --preset tiny|cpu|cpu-full|gpu [--out benches/results] [--repeats N] [--providers a,b]
    spherekit data install wordnet|gcide|spacy|nrc|models|all
    spherekit data status
    spherekit reproduce list | report DIR | EXPERIMENT --preset P [--conditions ...] [--backbone B] [--data-dir D] [--out DIR] [--seed S] [--force]
    spherekit eval MODEL --suite concept|stress|geometry|layerwise|emotion|nearmiss|all --split in-domain|head-holdout|source-holdout [--out DIR] [--limit N] [--device D]
"""

from __future__ import annotations

import argparse
import sys

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

    from .bench import ngpt as bench_ngpt

    n = bsub.add_parser("ngpt", help="nGPT geodesic residual providers side by side, GB/s vs measured peak",
                        description=bench_ngpt.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    n.add_argument("--preset", default="cpu", choices=sorted(bench_ngpt.PRESETS))
    n.add_argument("--out", default="benches/results", help="folder of the CSV (default: %(default)s)")
    n.add_argument("--repeats", type=int, help="timed calls per measurement (default: the preset's)")
    n.add_argument("--providers", type=lambda s: [p for p in s.split(",") if p],
                   help=f"comma-separated subset of {','.join(bench_ngpt.PROVIDERS)}")
    n.add_argument("--isolate", default="provider", choices=("provider", "task", "none"))
    n.add_argument("--mem-limit-gib", type=float, help="skip (predicted) or kill (measured RSS) above this")
    n.add_argument("--budget-s", type=float, help="time budget of the timed calls per measurement")
    n.add_argument("--timeout-s", type=float, default=1800.0, help="kill a measurement after this long")
    n.add_argument("--no-progress", action="store_true", help="no progress bar")

    from .bench import simmap as simmap_bench

    sm = bsub.add_parser("simmap", help="MaxSim (token-similarity map) providers side by side",
                         description=simmap_bench.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    simmap_bench.add_arguments(sm)

    # listed for --help only: main() forwards `bench verifier-train ...` to its own parser
    bsub.add_parser("verifier-train", add_help=False,
                    help="F4 verifier training throughput vs the paper's per-pair approach (--help for options)")

    bsub.add_parser("reproduce", add_help=False,
                    help="a reproduction's training and evaluation: spherekit's path vs a plain sentence-transformers "
                         "recipe (--help for options)")

    p = bsub.add_parser("plot", help="PNGs from <out>/<family>.csv")
    p.add_argument("what", choices=FAMILIES)
    p.add_argument("--out", default="benches/results")

    from .data import install as data_install

    data = sub.add_parser("data", help="offline lexical data and backbone models (install / status)")
    dsub = data.add_subparsers(dest="data_command", required=True)
    di = dsub.add_parser("install", help="install what can be installed, print what to do for the rest",
                         description=data_install.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    di.add_argument("what", nargs="+", choices=(*data_install.COMPONENTS, "all"))
    ds = dsub.add_parser("status", help="what is present")
    ds.add_argument("what", nargs="*", help=f"some of {', '.join(data_install.COMPONENTS)}, all (default: all)")

    from .evaluation import runner as eval_runner

    ev = sub.add_parser("eval", help="evaluation suites on a model (JSON + plots in results/eval/<model>)",
                        description=eval_runner.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    eval_runner.add_arguments(ev)

    from .experiments import cli as reproduce_cli

    rp = sub.add_parser("reproduce", help="reproduce a paper's experiments (result card in results/reproduce/...)",
                        description=reproduce_cli.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    reproduce_cli.add_arguments(rp)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["bench", "reproduce"]:
        from .bench import reproduce as bench_reproduce

        return bench_reproduce.main(argv[2:])
    if argv[:2] == ["bench", "verifier-train"]:
        from .bench import verifier_throughput

        return verifier_throughput.main(argv[2:])
    args = _parser().parse_args(argv)
    if args.command == "info":
        from . import info

        info()
        return 0
    if args.command == "eval":
        from .evaluation import runner as eval_runner

        return eval_runner.main(args)
    if args.command == "reproduce":
        from .experiments import cli as reproduce_cli

        return reproduce_cli.main(args)
    if args.command == "data":
        from .data import install as data_install

        if args.data_command == "install":
            return data_install.report(data_install.install(args.what))
        try:
            return data_install.report(data_install.status(args.what or "all"))
        except ValueError as exc:
            print(f"spherekit data status: {exc}")
            return 2
    if args.family == "plot":
        from .bench import plot

        paths = plot.plot(args.what, args.out)
        for path in paths:
            print(f"plot: {path}")
        return 0 if paths else 1
    if args.family == "ngpt":
        from .bench import ngpt as bench_ngpt

        return bench_ngpt.run(
            preset=args.preset, out=args.out, repeats=args.repeats, providers=args.providers, isolate=args.isolate,
            mem_limit_gib=args.mem_limit_gib, budget_s=args.budget_s, timeout_s=args.timeout_s,
            progress=not args.no_progress,
        )
    if args.family == "simmap":
        from .bench import simmap as simmap_bench

        return simmap_bench.run_from_args(args)
    from .bench import contrastive

    return contrastive.run(
        preset=args.preset, out=args.out, repeats=args.repeats, providers=args.providers, isolate=args.isolate,
        mem_limit_gib=args.mem_limit_gib, budget_s=args.budget_s, timeout_s=args.timeout_s,
        peak_tflops=args.peak_tflops, plot=not args.no_plot, progress=not args.no_progress,
    )


if __name__ == "__main__":
    raise SystemExit(main())
