"""F3's CNN over zero-padded maps without computing on the padding: exact, and cheaper the more of a map is padding.

CNNVerifier zero-pads each (3, m, n) map to S x S (S = map_size, 128 in "Training for Compositional Sensitivity
Reduces Dense Retrieval Generalization") and runs [Conv(k, pad k // 2) -> BatchNorm -> ReLU -> MaxPool s] x L ->
global average. Outside the top-left window that the m x n data reach through the receptive field, every map of
a batch holds the same values: those of an all-zero map, the background. So each layer is computed on

    crop        (N, C, h, w)   the window the data reach (h <= S_l, w <= S_l), one per map
    background  (1, C, S_l, S_l)  the all-zero map's activations at full size, shared by every map

and pixel (i, j) of map t is crop[t, :, i, j] inside the window and background[0, :, i, j] outside. Per layer:

    Conv        the window grows by k // 2; its input is the crop extended with the background's values
    BatchNorm   batch statistics over the N x S_l x S_l pixels: the crop's sums plus N times the background's
                sums outside the window (training; running statistics updated as nn.BatchNorm2d does);
                eval mode: the running statistics
    ReLU        on both
    MaxPool s   the window rounded up to a multiple of s (filled from the background), then pooled
    global avg  (the crop's sum + the background's sum outside the window) / S_L^2

The result equals ``conv(F.pad(x, to S x S))`` up to summation order, values and gradients
(tests/nn/test_cnn_crop.py); the work and the activation memory are those of the windows: a 16 x 100 map in
the paper's 128 x 128 layout costs about an eighth.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["cropped_cnn", "running_stats_frozen"]

_FROZEN = {"running_stats": False}


@contextmanager
def running_stats_frozen():
    """Within it, BatchNorm in training mode still normalises with batch statistics but leaves its running
    statistics (and num_batches_tracked) alone: a checkpointed forward recomputed in backward counts once."""
    before = _FROZEN["running_stats"]
    _FROZEN["running_stats"] = True
    try:
        yield
    finally:
        _FROZEN["running_stats"] = before


def _extend(crop: Tensor, background: Tensor, h: int, w: int) -> Tensor:
    """(N, C, h0, w0) -> (N, C, h, w): the crop with the background's values at rows >= h0 or columns >= w0."""
    n, _, h0, w0 = crop.shape
    if w > w0:
        crop = torch.cat([crop, background[:, :, :h0, w0:w].expand(n, -1, -1, -1)], dim=3)
    if h > h0:
        crop = torch.cat([crop, background[:, :, h0:h, :w].expand(n, -1, -1, -1)], dim=2)
    return crop


def _conv(layer: nn.Conv2d, crop: Tensor, background: Tensor) -> tuple[Tensor, Tensor]:
    k, p = layer.kernel_size, layer.padding
    if (layer.stride != (1, 1) or layer.dilation != (1, 1) or layer.groups != 1 or layer.padding_mode != "zeros"
            or isinstance(p, str) or k[0] % 2 == 0 or k[1] % 2 == 0 or p != (k[0] // 2, k[1] // 2)):
        raise ValueError(f"cropped_cnn handles stride-1 'same' convolutions with odd kernels, got {layer}")
    size_h, size_w = background.shape[2:]
    h, w = min(size_h, crop.shape[2] + p[0]), min(size_w, crop.shape[3] + p[1])  # the output window
    # rows < h need input rows < h + p: taken from the crop, else the background (the conv's own zero padding
    # is only used at the map's real borders: the top and left, and the bottom / right once the window reaches S)
    x = _extend(crop, background, min(size_h, h + p[0]), min(size_w, w + p[1]))
    return layer(x)[:, :, :h, :w], layer(background)


def _outside(background: Tensor, h: int, w: int) -> Tensor:
    """(C, K): the background's pixels outside the top-left h x w window."""
    keep = torch.ones(background.shape[2:], dtype=torch.bool, device=background.device)
    keep[:h, :w] = False
    return background[0][:, keep]


def _batch_norm(bn: nn.BatchNorm2d, crop: Tensor, background: Tensor) -> tuple[Tensor, Tensor]:
    n, _, h, w = crop.shape
    if bn.training or not bn.track_running_stats:
        out = _outside(background, h, w)
        count = n * background.shape[2] * background.shape[3]
        mean = (crop.sum((0, 2, 3)) + n * out.sum(1)) / count
        centred = (crop - mean[:, None, None]).square().sum((0, 2, 3)) + n * (out - mean[:, None]).square().sum(1)
        var = centred / count
        if bn.training and bn.track_running_stats and not _FROZEN["running_stats"]:
            with torch.no_grad():
                bn.num_batches_tracked.add_(1)
                factor = 1.0 / float(bn.num_batches_tracked) if bn.momentum is None else bn.momentum
                bn.running_mean.mul_(1 - factor).add_(factor * mean.detach())
                bn.running_var.mul_(1 - factor).add_(factor * var.detach() * count / max(1, count - 1))
    else:
        mean, var = bn.running_mean, bn.running_var
    scale = torch.rsqrt(var + bn.eps)
    shift = -mean * scale
    if bn.affine:
        scale, shift = scale * bn.weight, shift * bn.weight + bn.bias

    def norm(x):
        return x * scale[:, None, None] + shift[:, None, None]

    return norm(crop), norm(background)


def _max_pool(layer: nn.MaxPool2d, crop: Tensor, background: Tensor) -> tuple[Tensor, Tensor]:
    s = layer.kernel_size
    if (not isinstance(s, int) or layer.stride not in (s, (s, s)) or layer.padding not in (0, (0, 0))
            or layer.dilation not in (1, (1, 1)) or layer.ceil_mode):
        raise ValueError(f"cropped_cnn handles non-overlapping max pooling (kernel = stride, no padding), got {layer}")
    size_h, size_w = background.shape[2:]
    h, w = (min(size, -(-c // s) * s) for size, c in ((size_h, crop.shape[2]), (size_w, crop.shape[3])))
    return layer(_extend(crop, background, h, w)), layer(background)


def cropped_cnn(conv: nn.Sequential, maps: Tensor, map_size: int) -> Tensor:
    """CNNVerifier's ``conv`` stack on (N, C, m, n) maps as if zero-padded to map_size x map_size -> (N, C_out).

    The stack must be blocks of Conv2d / BatchNorm2d / ReLU / MaxPool2d ending in AdaptiveAvgPool2d(1), Flatten
    (as CNNVerifier builds it); anything else is an error naming the layer."""
    n, c, m, w = maps.shape
    if m > map_size or w > map_size:
        raise ValueError(f"maps of {m} x {w} exceed map_size={map_size}")
    crop, background = maps, maps.new_zeros(1, c, map_size, map_size)
    layers = list(conv)
    for i, layer in enumerate(layers):
        if isinstance(layer, nn.Conv2d):
            crop, background = _conv(layer, crop, background)
        elif isinstance(layer, nn.BatchNorm2d):
            crop, background = _batch_norm(layer, crop, background)
        elif isinstance(layer, nn.ReLU):
            crop, background = F.relu(crop), F.relu(background)
        elif isinstance(layer, nn.MaxPool2d):
            crop, background = _max_pool(layer, crop, background)
        elif isinstance(layer, nn.AdaptiveAvgPool2d) and layer.output_size in (1, (1, 1)):
            if not all(isinstance(rest, nn.Flatten) for rest in layers[i + 1:]):
                raise ValueError(f"cropped_cnn expects only Flatten after the global average, got {layers[i + 1:]}")
            size = background.shape[2] * background.shape[3]
            out = _outside(background, crop.shape[2], crop.shape[3])
            return (crop.sum((2, 3)) + out.sum(1)) / size
        else:
            raise ValueError(f"cropped_cnn cannot compute layer {i} ({layer}) on cropped maps")
    raise ValueError("cropped_cnn expects the stack to end in AdaptiveAvgPool2d(1), Flatten")
