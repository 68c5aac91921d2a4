"""The `spherekit` command (also `python -m spherekit`): argument parsing and dispatch only.

    spherekit info
    spherekit bench contrastive --preset cpu-small [--out benches/results] [--repeats N] [--providers a,b]
    spherekit bench plot contrastive [--out benches/results]
    spherekit bench verifier-train --preset tiny|cpu-small|gpu|gpu-paper-f4 [--mem-limit-gib G] [--providers a,b]
    spherekit bench reproduce concept --preset cpu-small|gpu|tiny [--steps N] [--backbone B]
    spherekit bench reproduce circumplex --preset cpu-small|gpu|tiny [--backbone B]
    spherekit bench sim-map --preset tiny|cpu|gpu [--out benches/results] [--providers a,b]
    spherekit bench ngpt --preset tiny|cpu|cpu-full|gpu [--out benches/results] [--repeats N] [--providers a,b]
    spherekit bench supervised --preset tiny|cpu [--sizes B ...] [--d D] [--out benches/results] [--providers a,b]
    spherekit data install wordnet|gcide|spacy|nrc|models|all [--only all-MiniLM-L6-v2]
    spherekit data status
    spherekit reproduce list | report DIR | EXPERIMENT --preset P [--conditions ...] [--backbone B] [--data-dir D] [--out DIR] [--seed S] [--force]
    spherekit eval MODEL --suite concept|stress|geometry|layerwise|emotion|nearmiss|all --split in-domain|head-holdout|source-holdout [--out DIR] [--limit N] [--device D]
"""

from __future__ import annotations

import argparse
import sys

from . import _extras

# `spherekit bench <name> ...`: the module of each benchmark family (its add_arguments(parser) declares the
# options, run_from_args(args) runs them, main(argv) does both) and its one-line help
BENCH_FAMILIES = {
    "contrastive": ("spherekit.bench.contrastive", "InfoNCE / MNRL providers side by side"),
    "ngpt": ("spherekit.bench.ngpt", "nGPT geodesic residual providers side by side, GB/s vs measured peak"),
    "sim-map": ("spherekit.bench.sim_map", "MaxSim (token-similarity map) providers side by side"),
    "supervised": ("spherekit.bench.supervised",
                   "SINCERE / SoftCSE / CircularCSE: the oracle vs spherekit's chunked CPU path"),
    "verifier-train": ("spherekit.bench.verifier_throughput",
                       "F4 verifier training throughput vs the paper's per-pair approach"),
    "reproduce": ("spherekit.bench.reproduce", "a reproduction's training and evaluation: spherekit's path vs a "
                  "plain sentence-transformers recipe"),
    "plot": ("spherekit.bench.plot", "PNGs from <out>/<family>.csv"),
}
BENCH_ALIASES = {"simmap": "sim-map"}  # old names that still work (with a note on stderr)
FAMILIES = ("contrastive",)  # the families `bench plot` draws (kept for compatibility: spherekit.bench.plot.PLOTTABLE)


def bench_module(name: str):
    """The module of `spherekit bench <name>`."""
    import importlib

    return importlib.import_module(BENCH_FAMILIES[name][0])


def _experiment_help(argv: list[str]) -> bool:
    """`spherekit reproduce <experiment> [--preset P] --help`: the experiment's own help (its fields for --set)."""
    if argv[:1] != ["reproduce"] or len(argv) < 3 or not {"-h", "--help"} & set(argv[2:]):
        return False
    from .experiments import names
    from .experiments.harness.cli import experiment_help

    if argv[1] not in names():
        return False
    preset = argv[argv.index("--preset") + 1] if "--preset" in argv[:-1] else "cpu-small"
    print(experiment_help(argv[1], preset))
    return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spherekit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, compiled extensions and usable backends")

    bench = sub.add_parser("bench", help="benchmarks (rows appended to <out>/<family>.csv)")
    bsub = bench.add_subparsers(dest="family", required=True)
    # listed for --help only: main() hands `bench <name> ...` to the family's own main (its --help has the options)
    for name, (_, text) in BENCH_FAMILIES.items():
        bsub.add_parser(name, add_help=False, help=f"{text} (--help for options)")

    from .data import install as data_install

    data = sub.add_parser("data", help="offline lexical data and backbone models (install / status)")
    dsub = data.add_subparsers(dest="data_command", required=True)
    di = dsub.add_parser("install", help="install what can be installed, print what to do for the rest",
                         description=data_install.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    di.add_argument("what", nargs="+", choices=(*data_install.COMPONENTS, "all"))
    di.add_argument("--only", type=lambda s: [m for m in s.split(",") if m], metavar="NAME[,NAME]",
                    help=f"models: install only these backbones ({', '.join(data_install.MODELS)}); the others are "
                    "installed on their first use")
    ds = dsub.add_parser("status", help="what is present")
    ds.add_argument("what", nargs="*", help=f"some of {', '.join(data_install.COMPONENTS)}, all (default: all)")

    from .evaluation import runner as eval_runner

    ev = sub.add_parser("eval", help="evaluation suites on a model (JSON + plots in results/eval/<model>)",
                        description=eval_runner.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    eval_runner.add_arguments(ev)

    from .experiments.harness import cli as reproduce_cli

    rp = sub.add_parser("reproduce", help="reproduce a paper's experiments (result card in results/reproduce/...)",
                        description=reproduce_cli.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    reproduce_cli.add_arguments(rp)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _extras.check_command(argv)  # `eval` / `reproduce` without their extra: one line naming it, before any work
    if argv[:1] == ["bench"] and len(argv) > 1 and argv[1] in BENCH_ALIASES:
        print(f"spherekit bench {argv[1]}: renamed to `spherekit bench {BENCH_ALIASES[argv[1]]}`", file=sys.stderr)
        argv[1] = BENCH_ALIASES[argv[1]]
    if argv[:1] == ["bench"] and len(argv) > 1 and argv[1] in BENCH_FAMILIES:
        return bench_module(argv[1]).main(argv[2:])
    if _experiment_help(argv):
        return 0
    args = _parser().parse_args(argv)
    if args.command == "info":
        from . import info

        info()
        return 0
    if args.command == "eval":
        from .evaluation import runner as eval_runner

        return eval_runner.main(args)
    if args.command == "reproduce":
        from .experiments.harness import cli as reproduce_cli

        return reproduce_cli.main(args)
    if args.command == "data":
        from .data import install as data_install

        if args.data_command == "install":
            try:
                return data_install.report(data_install.install(args.what, only=args.only))
            except ValueError as exc:
                print(f"spherekit data install: {exc}")
                return 2
        try:
            return data_install.report(data_install.status(args.what or "all"))
        except ValueError as exc:
            print(f"spherekit data status: {exc}")
            return 2
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse only accepts the commands above


if __name__ == "__main__":
    raise SystemExit(main())
