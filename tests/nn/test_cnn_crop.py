"""spherekit.nn._cnn_crop.cropped_cnn equals F3's CNN on the maps zero-padded to map_size x map_size: features,
gradients of the maps and of every parameter, and BatchNorm's running statistics; training and eval mode,
kernels 3 and 5, one to three blocks, odd and even map sizes, maps from 1 x 1 to the full size; bad stacks
are errors naming the layer."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from spherekit.nn import CNNVerifier
from spherekit.nn._cnn_crop import cropped_cnn


def _padded(conv, maps, size):
    return conv(F.pad(maps, (0, size - maps.shape[3], 0, size - maps.shape[2])))


def _run(fn, conv, maps):
    x = maps.clone().requires_grad_()
    out = fn(conv, x)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(7))
    names, params = zip(*conv.named_parameters())
    grads = torch.autograd.grad((out * weights).sum(), [x, *params])
    return out, dict(zip(("maps", *names), grads))


def _check(conv, maps, size, train):
    conv.train(train)
    ref_conv, new_conv = copy.deepcopy(conv), copy.deepcopy(conv)
    ref, ref_grads = _run(lambda c, x: _padded(c, x, size), ref_conv, maps)
    out, grads = _run(lambda c, x: cropped_cnn(c, x, size), new_conv, maps)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    scale = max(float(g.abs().max()) for g in ref_grads.values())
    # a conv bias right before BatchNorm in training mode has gradient 0 in exact arithmetic: only rounding noise
    # is left in it (more of it on the padded side, which sums over every padded pixel): checked to be noise
    noise = {f"{i}.bias" for i, layer in enumerate(conv) if isinstance(layer, nn.Conv2d) and train}
    for name, g in grads.items():
        if name in noise:
            assert max(float(g.abs().max()), float(ref_grads[name].abs().max())) < 3e-4 * scale, name
        else:
            torch.testing.assert_close(g, ref_grads[name], atol=1e-5 * max(1.0, scale), rtol=1e-4, msg=name)
    for a, b in zip(new_conv.buffers(), ref_conv.buffers()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("layers,kernel,size,shape", [
    (2, 3, 16, (5, 9)), (2, 3, 16, (16, 16)), (2, 3, 16, (1, 1)), (2, 3, 16, (16, 3)), (1, 3, 8, (3, 8)),
    (2, 5, 13, (4, 7)), (3, 3, 12, (12, 5)), (2, 3, 32, (11, 23)), (3, 5, 20, (2, 19)),
])
def test_cropped_cnn_equals_the_padded_cnn(layers, kernel, size, shape, train, one_thread):
    torch.manual_seed(layers * 100 + kernel * 10 + size)
    verifier = CNNVerifier(channels=4, num_layers=layers, kernel_size=kernel, mlp_hidden=8, map_size=size)
    conv = verifier.conv
    if not train:  # non-trivial running statistics
        for module in conv:
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5), module.running_var.uniform_(0.5, 2.0)
    maps = torch.randn(6, 3, *shape, generator=torch.Generator().manual_seed(size))
    _check(conv, maps, size, train)


def test_running_statistics_over_several_steps_and_cumulative_momentum(one_thread):
    torch.manual_seed(0)
    conv = CNNVerifier(channels=3, num_layers=2, mlp_hidden=4, map_size=16).conv
    for module in conv:
        if isinstance(module, nn.BatchNorm2d):
            module.momentum = None  # cumulative moving average: 1 / num_batches_tracked
    ref, new = copy.deepcopy(conv), copy.deepcopy(conv)
    for step in range(3):
        maps = torch.randn(4, 3, 3 + step, 6, generator=torch.Generator().manual_seed(step))
        _padded(ref, maps, 16), cropped_cnn(new, maps, 16)
    for (name, a), b in zip(new.named_buffers(), ref.buffers()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=name)
    assert int(new[1].num_batches_tracked) == 3


def test_verifier_scores_equal_the_padded_network(one_thread):
    torch.manual_seed(1)
    verifier = CNNVerifier(channels=4, num_layers=2, mlp_hidden=8, dropout=0.0, map_size=16, backend="cpu")
    g = torch.Generator().manual_seed(2)
    q, d = torch.randn(5, 4, 12, generator=g), torch.randn(5, 9, 12, generator=g)
    qm, dm = torch.rand(5, 4, generator=g) > 0.3, torch.rand(5, 9, generator=g) > 0.3
    qm[:, 0] = dm[:, 0] = True
    from spherekit.reference.paper_verifier import PaperStyleF3

    for train in (True, False):
        verifier.train(train)
        paper = PaperStyleF3.from_verifier(copy.deepcopy(verifier))
        torch.testing.assert_close(verifier.score(q, qm, d, dm), paper(q, qm, d, dm), atol=1e-5, rtol=1e-5)


def test_bad_stacks_and_sizes_name_the_problem():
    maps = torch.randn(2, 3, 4, 4)
    with pytest.raises(ValueError, match="exceed map_size=3"):
        cropped_cnn(CNNVerifier(channels=2, num_layers=1, map_size=8).conv, maps, 3)
    strided = nn.Sequential(nn.Conv2d(3, 2, 3, stride=2, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    with pytest.raises(ValueError, match="stride-1 'same' convolutions"):
        cropped_cnn(strided, maps, 8)
    even = nn.Sequential(nn.Conv2d(3, 2, 2, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    with pytest.raises(ValueError, match="odd kernels"):
        cropped_cnn(even, maps, 8)
    with pytest.raises(ValueError, match=r"layer 1 \(Tanh\(\)\)"):
        cropped_cnn(nn.Sequential(nn.Conv2d(3, 2, 3, padding=1), nn.Tanh()), maps, 8)
    with pytest.raises(ValueError, match="non-overlapping max pooling"):
        cropped_cnn(nn.Sequential(nn.MaxPool2d(3, stride=1), nn.AdaptiveAvgPool2d(1), nn.Flatten()), maps, 8)
    with pytest.raises(ValueError, match="end in AdaptiveAvgPool2d"):
        cropped_cnn(nn.Sequential(nn.Conv2d(3, 2, 3, padding=1)), maps, 8)
