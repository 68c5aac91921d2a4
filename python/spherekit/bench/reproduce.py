"""`spherekit bench reproduce <experiment>`: a reproduction's own benchmark (the bench module of its paper package,
spherekit.experiments.<name>.bench), one subcommand per paper that has one.

    spherekit bench reproduce concept --preset cpu-small        spherekit's training path vs plain sentence-transformers
    spherekit bench reproduce circumplex --preset cpu-small     cached backbone states vs the backbone on every step
    spherekit bench reproduce defsent --preset cpu-small        DefSent+'s fused bank loss vs a Linear head
    spherekit bench reproduce compositional --preset cpu-small  verifier training: all-pairs maps vs the released loop
"""

from __future__ import annotations

from ._harness import family_entry

FAMILY = "reproduce"


def benches() -> dict:
    """{experiment name: its bench module} of every discovered paper that has one."""
    from ..experiments import get, names

    out = {}
    for name in names():
        experiment = get(name)
        if experiment.has_module("bench"):
            out[name] = experiment.module("bench")
    return out


def add_arguments(parser) -> None:
    """One subcommand per paper with a bench module; its options are the module's own (add_arguments)."""
    sub = parser.add_subparsers(dest="experiment", required=True)
    for name, module in benches().items():
        first = (module.__doc__ or name).strip().splitlines()[0]
        module.add_arguments(sub.add_parser(name, help=first, description=module.__doc__,
                                            formatter_class=parser.formatter_class))


def run_from_args(args) -> int:
    return benches()[args.experiment].run_from_args(args)


main = family_entry(__name__)
