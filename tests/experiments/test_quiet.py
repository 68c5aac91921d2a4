"""library_progress_bars: under --no-progress every tqdm bar is created disabled inside the block (a caller's own
disable=False and the libraries' bars included), and tqdm is as it was after the block."""

import io

import pytest
import tqdm
import tqdm.auto
from transformers.utils import logging as hf_logging

from spherekit.experiments.harness.quiet import library_progress_bars


def _drawn(make) -> str:
    out = io.StringIO()
    for _ in make(out):
        pass
    return out.getvalue()


BARS = {
    "tqdm, disable=False": lambda out: tqdm.tqdm(range(3), file=out, disable=False),
    "trange": lambda out: tqdm.trange(3, file=out),
    "tqdm.auto": lambda out: tqdm.auto.tqdm(range(3), file=out),
    "transformers' logging.tqdm": lambda out: hf_logging.tqdm(range(3), file=out),
}


@pytest.mark.parametrize("name", BARS)
def test_bars_off_inside_and_back_after(name):
    make = BARS[name]
    assert "it/s" in _drawn(make)
    with library_progress_bars(False):
        assert _drawn(make) == ""
    assert "it/s" in _drawn(make)
    with library_progress_bars(True):
        assert "it/s" in _drawn(make)


def test_restored_when_the_block_raises():
    init = tqdm.std.tqdm.__init__
    with pytest.raises(RuntimeError), library_progress_bars(False):
        raise RuntimeError("stop")
    assert tqdm.std.tqdm.__init__ is init
