"""Bad input to sincere gets a clear error naming the argument: the embeddings / labels / backend checks shared with
circular_cse (_errors_cases.EMBEDDINGS), the temperature checks shared with info_nce (_errors_cases.TEMPERATURE),
Inf embeddings, labels (including batches where no anchor has a positive, or every embedding shares one label),
label_bias, devices."""

from __future__ import annotations

import pytest
import torch

from spherekit.ops import sincere
from tests.ops._errors_cases import EMBEDDINGS, TEMPERATURE, call_with, labelled_embeddings

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")


@pytest.mark.parametrize(
    "kwargs, error, match",
    EMBEDDINGS + TEMPERATURE + [
        (dict(embeddings=torch.full((6, 8), float("inf"))), ValueError, "NaN or Inf found in embeddings"),
        (dict(labels=torch.zeros(6, 1, dtype=torch.long)), ValueError, "labels must have 1 dimensions"),
        (dict(labels=torch.arange(6)), ValueError, "labels: no anchor has a positive"),
        (dict(labels=torch.full((6,), 3)), ValueError, "labels: all 6 embeddings share one label"),
        (dict(embeddings=torch.randn(2, 8), labels=torch.tensor([0, 0])), ValueError, "share one label"),
        (dict(embeddings=torch.randn(2, 8), labels=torch.tensor([0, 1])), ValueError, "no anchor has a positive"),
        (dict(temperature=-0.1), ValueError, "temperature must be > 0"),
        (dict(label_bias=torch.zeros(3)), ValueError, "label_bias must have 2 dimensions"),
        (dict(label_bias=torch.zeros(3, 4)), ValueError, "label_bias must be square"),
        (dict(label_bias=torch.zeros(3, 3, dtype=torch.long)), TypeError, "label_bias must have dtype"),
        (dict(label_bias=torch.zeros(2, 2)), ValueError, r"labels must lie in \[0, 2\)"),
        (dict(labels=torch.tensor([0, 0, 1, 1, -1, -1]), label_bias=torch.zeros(3, 3)), ValueError,
         r"labels must lie in \[0, 3\)"),
        (dict(label_bias=torch.full((3, 3), float("nan"))), ValueError, "label_bias contains NaN or \\+Inf"),
        (dict(label_bias=torch.full((3, 3), float("inf"))), ValueError, "label_bias contains NaN or \\+Inf"),
        (dict(label_bias=torch.zeros(3, 3, requires_grad=True)), ValueError, "label_bias receives no gradient"),
    ],
)
def test_errors(kwargs, error, match):
    e, y = labelled_embeddings()
    with pytest.raises(error, match=match):
        call_with(sincere, dict(embeddings=e, labels=y), kwargs)


def test_error_device_mismatch():
    e, y = labelled_embeddings()
    with pytest.raises(ValueError, match="labels must be on device"):
        sincere(e, y.to("meta"))
