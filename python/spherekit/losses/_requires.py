"""The losses subclass sentence-transformers' modules: without it, say which extra brings it (one line)."""

from .. import _extras

if _extras.missing("st"):
    raise ModuleNotFoundError(_extras.message("st", "spherekit.losses"), name="sentence_transformers")
