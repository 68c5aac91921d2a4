"""The stress, nearmiss and emotion suites moved to spherekit.evaluation.evaluators; their old module paths still
import, and each of their public names comes from the new module with a DeprecationWarning naming it."""

import importlib
import warnings

import pytest

from spherekit.evaluation.suites import KINDS, SUITES

MOVED = {
    "stress": ["StressTestEvaluator", "make_evaluator"],
    "nearmiss": ["NearMissEvaluator", "balanced_limit", "make_evaluator"],
    "emotion": ["EmotionCircumplexEvaluator", "make_evaluator"],
}
CASES = [(suite, name) for suite, names in MOVED.items() for name in names]


@pytest.mark.parametrize("suite,name", CASES)
def test_old_path_warns_and_gives_the_same_object(suite, name):
    old = importlib.import_module(f"spherekit.evaluation.{suite}")
    new = importlib.import_module(f"spherekit.evaluation.evaluators.{suite}")
    with pytest.warns(DeprecationWarning, match=f"spherekit.evaluation.evaluators.{suite}.{name}"):
        moved = getattr(old, name)
    assert moved is getattr(new, name)


def test_from_imports_of_the_old_paths_warn():
    from spherekit.evaluation.evaluators import emotion, nearmiss, stress

    with pytest.warns(DeprecationWarning, match="spherekit.evaluation.evaluators.stress"):
        from spherekit.evaluation.stress import StressTestEvaluator
    with pytest.warns(DeprecationWarning, match="spherekit.evaluation.evaluators.nearmiss"):
        from spherekit.evaluation.nearmiss import balanced_limit
    with pytest.warns(DeprecationWarning, match="spherekit.evaluation.evaluators.emotion"):
        from spherekit.evaluation.emotion import EmotionCircumplexEvaluator
    assert StressTestEvaluator is stress.StressTestEvaluator and balanced_limit is nearmiss.balanced_limit
    assert EmotionCircumplexEvaluator is emotion.EmotionCircumplexEvaluator


def test_unknown_name_of_an_old_path_is_still_an_attribute_error():
    import spherekit.evaluation.stress as old

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no_such_name"):
            old.no_such_name  # noqa: B018


def test_every_suite_lives_in_evaluators_and_has_one_kind():
    assert all(module == f"spherekit.evaluation.evaluators.{name}" for name, module in SUITES.items())
    grouped = [name for names in KINDS.values() for name in names]
    assert sorted(grouped) == sorted(SUITES) and len(grouped) == len(set(grouped))


def test_evaluators_package_exports_the_moved_evaluators():
    from spherekit.evaluation import evaluators
    from spherekit.evaluation.evaluators.emotion import EmotionCircumplexEvaluator
    from spherekit.evaluation.evaluators.nearmiss import NearMissEvaluator
    from spherekit.evaluation.evaluators.stress import StressTestEvaluator

    assert evaluators.StressTestEvaluator is StressTestEvaluator
    assert evaluators.NearMissEvaluator is NearMissEvaluator
    assert evaluators.EmotionCircumplexEvaluator is EmotionCircumplexEvaluator
