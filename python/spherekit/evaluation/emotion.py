"""Deprecated path: the emotion suite lives in spherekit.evaluation.evaluators.emotion; its names stay importable from
here with a DeprecationWarning."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, "spherekit.evaluation.evaluators.emotion",
                           ("EmotionCircumplexEvaluator", "make_evaluator"))
