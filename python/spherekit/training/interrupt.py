"""Ctrl-C during `spherekit reproduce`: stop at the next safe point, keep what is done, say how to resume.

The first Ctrl-C asks for a stop: training stops at the end of its current step after saving a checkpoint
(training.train's callback), and the runner stops before its next run; the run in progress is left unfinished (no
`done`), so rerunning the same command resumes it from that checkpoint. A second Ctrl-C stops at once
(KeyboardInterrupt). Either way the runner records the time the interrupted attempt took, so that the finished
run's card counts it (seconds["interrupted"]).
"""

from __future__ import annotations

import contextlib
import signal
import threading

_requested = threading.Event()


class Interrupted(Exception):
    """The run was stopped at a safe point after a Ctrl-C."""


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    """Raise Interrupted when a stop was asked for."""
    if _requested.is_set():
        raise Interrupted


@contextlib.contextmanager
def graceful(log):
    """Within the block, the first SIGINT asks for a stop at the next safe point (log says so), the second raises
    KeyboardInterrupt. Outside the main thread the block runs unchanged (signals only reach the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if _requested.is_set():
            raise KeyboardInterrupt
        _requested.set()
        log("Ctrl-C: stopping at the next safe point (the end of this training step, or of this run); "
            "press it again to stop now")

    _requested.clear()
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested.clear()


def trainer_callback():
    """A transformers TrainerCallback that saves a checkpoint and ends training at the end of the step during
    which a stop was asked for."""
    from transformers import TrainerCallback

    class StopOnRequest(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if _requested.is_set():
                control.should_save = True
                control.should_training_stop = True
            return control

    return StopOnRequest()


__all__ = ["Interrupted", "check", "graceful", "requested", "trainer_callback"]
