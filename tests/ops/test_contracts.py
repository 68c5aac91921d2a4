"""Every backend implementation has its family's launchers (spherekit.ops.contracts) with the same parameter
names in the same order and the same kinds (tensors positional, options keyword-only); the backends the contracts
name for a family are the ones its op dispatches to."""

import importlib
import importlib.util
import inspect

import pytest

from spherekit.ops.contracts import IMPLEMENTATIONS, backends

CASES = [(family, target) for family, (_, targets) in IMPLEMENTATIONS.items() for target in targets]
# the families with a public op of their own (info_nce_rows is a part of info_nce's chunked path)
FAMILIES = [f for f in IMPLEMENTATIONS if importlib.util.find_spec(f"spherekit.ops.{f}") is not None]


def _launchers(protocol) -> list[str]:
    return [name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")]


def _all_launchers(protocol) -> list[str]:
    names = []
    for klass in reversed(protocol.__mro__):
        if klass.__module__ == protocol.__module__:
            names += [n for n in _launchers(klass) if n not in names]
    return names


def _params(fn, drop_self: bool) -> list[tuple[str, inspect._ParameterKind]]:
    params = list(inspect.signature(fn).parameters.values())
    return [(p.name, p.kind) for p in (params[1:] if drop_self else params)]


@pytest.mark.parametrize("family,target", CASES, ids=[f"{f}-{t.rsplit('.', 1)[-1]}" for f, t in CASES])
def test_implementation_matches_its_contract(family, target):
    protocol = IMPLEMENTATIONS[family][0]
    module_name, _, class_name = target.partition(":")
    try:
        impl = importlib.import_module(module_name)
    except ImportError as exc:  # a Triton-less install: the kernels are not importable
        pytest.skip(f"{module_name} does not import here: {exc}")
    if class_name:
        impl = getattr(impl, class_name)
    names = _all_launchers(protocol)
    assert names, f"{protocol.__name__} declares no launchers"
    for name in names:
        assert hasattr(impl, name), f"{target} lacks {name} ({protocol.__name__})"
        want = _params(getattr(protocol, name), drop_self=True)
        got = _params(getattr(impl, name), drop_self=bool(class_name))
        assert got == want, f"{target}.{name}: parameters {got} differ from {protocol.__name__}.{name}: {want}"


def test_every_family_module_is_listed():
    """A new backend module under ops/ (an _<family>_<backend>.py) must join its family's contract."""
    import pathlib

    import spherekit.ops as ops

    listed = {t.partition(":")[0] for _, targets in IMPLEMENTATIONS.values() for t in targets}
    folder = pathlib.Path(ops.__file__).parent
    backends = {f"spherekit.ops.{p.stem}" for p in folder.glob("_*_*.py")
                if p.stem.rsplit("_", 1)[-1] in ("cpu", "cpp", "cuda")}
    # maxsim_ragged has one compiled backend (CUDA); its CPU path is plain torch inside the op: no family contract
    unlisted = sorted(backends - listed - {"spherekit.ops._maxsim_cuda"})
    assert not unlisted, f"backend modules without a contract in spherekit.ops.contracts: {unlisted}"


@pytest.mark.parametrize("family", FAMILIES)
def test_backends_are_the_ones_the_op_dispatches_to(family):
    """backends(family), the backends the op tests run (tests/ops/_harness.py), are those the op accepts besides its
    oracle (SUPPORTED in spherekit.ops.<family>): a backend the op dispatches to cannot go untested."""
    op = importlib.import_module(f"spherekit.ops.{family}")
    assert set(backends(family)) == set(op.SUPPORTED) - {"reference"}


def test_kernels_ignore_index_equals_the_oracles():
    """The Triton kernels do not import the oracles, so they hold their own copy of the ignored-row target."""
    common = pytest.importorskip("spherekit.kernels._common")
    from spherekit.reference.contrastive import IGNORE_INDEX

    assert common.IGNORE_INDEX.value == IGNORE_INDEX == -100
