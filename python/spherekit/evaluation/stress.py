"""Deprecated path: the stress suite lives in spherekit.evaluation.evaluators.stress; its names stay importable from
here with a DeprecationWarning."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, "spherekit.evaluation.evaluators.stress",
                           ("StressTestEvaluator", "make_evaluator"))
