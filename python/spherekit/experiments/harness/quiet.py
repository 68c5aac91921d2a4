"""--no-progress for every bar a run draws, the libraries' included: within the block every tqdm bar is created
disabled, whatever its caller asked for. Some libraries' bars have no switch (sentence-transformers'
mine_hard_negatives encodes with show_progress_bar=True), so the switch is tqdm's own constructor, put back after
the block."""

from __future__ import annotations

import contextlib
import functools

from tqdm import std


@contextlib.contextmanager
def library_progress_bars(enabled: bool):
    """Within the block every tqdm bar (ours, transformers', datasets', sentence-transformers', the hub's) is
    disabled unless `enabled`; tqdm's constructor is restored after it."""
    if enabled:
        yield
        return
    original = std.tqdm.__init__

    @functools.wraps(original)
    def disabled(self, *args, **kwargs):
        kwargs["disable"] = True
        original(self, *args, **kwargs)

    std.tqdm.__init__ = disabled
    try:
        yield
    finally:
        std.tqdm.__init__ = original


__all__ = ["library_progress_bars"]
