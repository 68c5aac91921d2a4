"""Deprecated path: the nearmiss suite lives in spherekit.evaluation.evaluators.nearmiss; its names stay importable from
here with a DeprecationWarning."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, "spherekit.evaluation.evaluators.nearmiss",
                           ("NearMissEvaluator", "balanced_limit", "make_evaluator"))
