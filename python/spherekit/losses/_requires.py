"""The losses subclass sentence-transformers' modules: without it, say which extra brings it."""

try:
    import sentence_transformers  # noqa: F401
except ModuleNotFoundError as exc:
    raise ModuleNotFoundError("spherekit.losses needs sentence-transformers: pip install 'spherekit[st]' (or "
                              "pip install 'sentence-transformers>=6,<7')", name=exc.name) from exc
