"""The experiment core's flat modules moved into experiments.api / experiments.harness / spherekit.training; the
old import paths stay importable for one release, each name with a DeprecationWarning that names its new place."""

import importlib

import pytest

E = "spherekit.experiments"
MOVES = {**{f"{E}.{m}": f"{E}.api.{m}" for m in
            "plugin config units claims printed metrics uncertainty learning fmt".split()},
         **{f"{E}.{m}": f"{E}.harness.{m}" for m in "runner context restore card index cli gpu_hours".split()},
         f"{E}.training": "spherekit.training.trainer", f"{E}.optim": "spherekit.training.optim",
         f"{E}.verifier_training": "spherekit.training.verifier", f"{E}.interrupt": "spherekit.training.interrupt"}
ELSEWHERE = {(f"{E}.plugin", "discover"): f"{E}.harness.discovery", (f"{E}.card", "cached_json"): f"{E}.api.files",
             (f"{E}.context", "CHECKPOINT"): f"{E}.api.files"}


@pytest.mark.parametrize("old, new", sorted(MOVES.items()))
def test_every_public_name_of_a_moved_module_warns_and_is_the_same_object(old, new):
    module, target = importlib.import_module(old), importlib.import_module(new)
    names = getattr(target, "__all__", None) or [n for n in vars(target) if not n.startswith("_") and getattr(
        vars(target)[n], "__module__", None) == new]  # a module without __all__: the functions and classes it defines
    assert names, new
    for name in names:
        with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to"):
            assert getattr(module, name) is getattr(target, name)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize("old, name", sorted(ELSEWHERE))
def test_names_that_moved_elsewhere_point_at_their_own_module(old, name):
    new = ELSEWHERE[(old, name)]
    with pytest.warns(DeprecationWarning, match=f"{new}.{name}"):
        assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new), name)
