"""What the hot-path tests watch: host syncs, launches and live bytes of one call of an op.

- no_host_sync(): every Tensor method that hands a tensor's value to the host (item, tolist, cpu, numpy, bool(),
  float(), int()) raises HostSyncError inside the block. On a GPU each of them waits for the device; on the CPU
  tests they mark the same code paths. The ops in the default ("fast") check mode make none.
- count_launches(fn): the leaf aten operators fn calls (the profiler sees every one, inside custom ops too) and
  the Triton kernels it launches (compiled or under the interpreter), so a test can assert that the count does not
  grow with the batch.
- peak_live_bytes(fn): the most bytes of tensors fn allocated and still holds at any point (a TorchDispatchMode
  tracks every output's storage and frees it when the tensor dies), the CPU-side proof of a memory budget; it
  also counts meta tensors, so a goal shape's bytes can be measured without allocating them.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections import Counter
from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode

SYNCING_METHODS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__")


class HostSyncError(RuntimeError):
    """A tensor's value was read on the host inside no_host_sync()."""


@contextlib.contextmanager
def no_host_sync():
    """Inside the block, reading a tensor's value on the host (SYNCING_METHODS) raises HostSyncError."""
    patches = []
    for name in SYNCING_METHODS:
        def refuse(self, *args, _name=name, **kwargs):
            raise HostSyncError(f"Tensor.{_name} called on a tensor of shape {tuple(self.shape)}: a host sync")
        patches.append(mock.patch.object(torch.Tensor, name, refuse))
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


def _triton_run_methods():
    import triton.runtime.interpreter as interpreter
    import triton.runtime.jit as jit

    return [(jit.JITFunction, "run"), (interpreter.InterpretedFunction, "run")]


def count_launches(fn, *args, **kwargs):
    """Run fn(*args, **kwargs) -> (its result, Counter of the leaf aten operators by name, number of Triton launches).

    A leaf operator is an aten call (seen by the profiler at any depth, inside custom ops too) that calls no other
    aten operator: on a device, the calls that launch kernels."""
    from torch.profiler import ProfilerActivity, profile

    launches = [0]
    stack = contextlib.ExitStack()
    for cls, name in _triton_run_methods():
        original = getattr(cls, name)

        def counted(self, *a, _original=original, **k):
            launches[0] += 1
            return _original(self, *a, **k)
        stack.enter_context(mock.patch.object(cls, name, counted))
    with stack, profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn(*args, **kwargs)
    leaves = Counter(e.name for e in prof.events() if e.name.startswith("aten::")
                     and not any(child.name.startswith("aten::") for child in e.cpu_children))
    return out, leaves, launches[0]


class _LiveBytes(TorchDispatchMode):
    """Bytes of the storages created inside the mode and still referenced by a live tensor; the peak of that sum.
    An output that aliases an input (a view, an in-place op) allocates nothing and is not counted."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._storages: dict[int, list[int]] = {}  # storage address -> [bytes, live tensors using it]

    def _drop(self, key: int) -> None:
        entry = self._storages[key]
        entry[1] -= 1
        if entry[1] == 0:
            del self._storages[key]
            self.live -= entry[0]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage()._cdata for t in torch.utils._pytree.tree_leaves((args, kwargs))
                  if isinstance(t, torch.Tensor)}
        for t in torch.utils._pytree.tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = storage._cdata  # the storage object itself: also on the meta device, where nothing has an address
            if key in inputs and key not in self._storages:
                continue
            entry = self._storages.setdefault(key, [storage.nbytes(), 0])
            if entry[1] == 0:
                self.live += entry[0]
                self.peak = max(self.peak, self.live)
            entry[1] += 1
            weakref.finalize(t, self._drop, key)
        return out


def peak_live_bytes(fn, *args, **kwargs):
    """Run fn(*args, **kwargs) -> (its result, the peak bytes of tensors allocated inside it and alive at once)."""
    gc.collect()
    tracker = _LiveBytes()
    with tracker:
        out = fn(*args, **kwargs)
    return out, tracker.peak
