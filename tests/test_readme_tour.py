"""The README's tour runs as written (its first Python block after "## A tour"), and the BCE formula stated next to
its info_nce example is what the op computes."""

import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _tour() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = text[text.index("## A tour"):]
    return re.search(r"```python\n(.*?)```", tour, re.S).group(1)


def test_readme_tour_runs_as_written():
    scope: dict = {}
    exec(compile(_tour(), "README.md (tour)", "exec"), scope)
    assert scope["loss"].ndim == 0 and torch.isfinite(scope["loss"])
    assert scope["q"].grad is not None and scope["scores"].shape == (8, 8) and scope["h"].shape == (16, 768)
    torch.testing.assert_close(scope["h"].norm(dim=-1), torch.ones(16))


def test_readme_states_the_defaults_it_runs():
    import inspect

    from spherekit.ops import info_nce

    defaults = {k: p.default for k, p in inspect.signature(info_nce).parameters.items()}
    tour = _tour()
    assert defaults["bce_scale"] == 20.0 and "bce_scale=20" in tour
    assert defaults["bce_bias"] == 0.0 and "bce_bias=0" in tour
    assert defaults["bce_weight"] == 0.5 and "bce_weight=0.5" in tour
