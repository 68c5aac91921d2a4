"""Executed matrix-product FLOPs of a block of code, counted from the profiler's recorded shapes.

Each aten matrix product the block dispatches (mm, addmm, addmm_, bmm, baddbmm, addbmm and their in-place forms,
with or without out=) counts 2 m k n FLOP (times the batch for bmm / baddbmm), read from the input shapes
torch.profiler records (record_shapes=True). This sees the products inside custom ops and torch.compile graphs (they
dispatch aten ops too) and the in-place addmm_ that torch.utils.flop_counter misses; it does not see the products a
Triton kernel computes (those are no aten ops): a Triton path counts 0 here. A product nested in a counted one is
not counted twice.

    with MatmulCounter() as counted:
        loss_fn().backward()
    counted.flops   # e.g. 3 x 2 B N d for the chunked InfoNCE forward + backward
"""

from __future__ import annotations

PRODUCTS = {  # aten op -> index of its first factor among the recorded input shapes
    "aten::mm": 0, "aten::bmm": 0,
    "aten::addmm": 1, "aten::addmm_": 1, "aten::baddbmm": 1, "aten::baddbmm_": 1, "aten::addbmm": 1,
    "aten::addbmm_": 1,
}


def product_flops(name: str, shapes: list) -> int:
    """2 m k n (x batch) of one recorded product; 0 when the shapes are not those of a product."""
    i = PRODUCTS[name]
    try:
        a, b = shapes[i], shapes[i + 1]
    except (IndexError, TypeError):
        return 0
    if len(a) == 2 and len(b) == 2:
        return 2 * a[0] * a[1] * b[1]
    if len(a) == 3 and len(b) == 3:
        return 2 * a[0] * a[1] * a[2] * b[2]
    return 0


def matmul_flops(events) -> int:
    """Executed product FLOPs of profiler events (FunctionEvent objects with name, input_shapes, cpu_parent)."""
    total = 0
    for event in events:
        if event.name not in PRODUCTS:
            continue
        parent = event.cpu_parent
        while parent is not None and parent.name not in PRODUCTS:
            parent = parent.cpu_parent
        if parent is None:
            total += product_flops(event.name, event.input_shapes)
    return total


class MatmulCounter:
    """Context manager: after exit, ``flops`` holds the executed matrix-product FLOPs of the block."""

    def __init__(self):
        self.flops = 0
        self._prof = None

    def __enter__(self):
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        self._prof.__exit__(*exc)
        self.flops = matmul_flops(self._prof.events())
        return False
