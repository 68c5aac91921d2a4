"""Bad input to circular_cse gets a clear error naming the argument: the embeddings / labels / backend checks shared
with sincere (_errors_cases.EMBEDDINGS), labels out of range, label_angles, margin, devices."""

from __future__ import annotations

import math

import pytest
import torch

from spherekit.ops import circular_cse
from tests.ops._errors_cases import EMBEDDINGS, call_with, labelled_embeddings

# every case here runs with the opt-in value scans on (spherekit.checks("full"))
pytestmark = pytest.mark.usefixtures("full_checks")

ANGLES = torch.arange(3, dtype=torch.float64) * (math.pi / 6)  # 3 labels, i * 30 degrees


def _good():
    return (*labelled_embeddings(), ANGLES)


@pytest.mark.parametrize(
    "kwargs, error, match",
    EMBEDDINGS + [
        (dict(labels=torch.tensor([0, 0, 1, 1, 2, 3])), ValueError, r"labels must lie in \[0, 3\)"),
        (dict(labels=torch.tensor([0, 0, 1, 1, 2, -1])), ValueError, r"labels must lie in \[0, 3\)"),
        (dict(label_angles=torch.zeros(3, 1)), ValueError, "label_angles must have 1 dimensions"),
        (dict(label_angles=torch.arange(3)), TypeError, "label_angles must have dtype"),
        (dict(label_angles=torch.zeros(0)), ValueError, "label_angles is empty"),
        (dict(label_angles=torch.tensor([0.0, float("nan"), 1.0])), ValueError, "NaN or Inf found in label_angles"),
        (dict(label_angles=torch.zeros(3, requires_grad=True)), ValueError, "label_angles receives no gradient"),
        (dict(margin=-0.1), ValueError, "margin must be a finite float >= 0"),
        (dict(margin=float("inf")), ValueError, "margin must be a finite float >= 0"),
        (dict(margin=float("nan")), ValueError, "margin must be a finite float >= 0"),
        (dict(margin=torch.tensor(0.1)), TypeError, "margin must be a float"),
        (dict(margin=True), TypeError, "margin must be a float"),
    ],
)
def test_errors(kwargs, error, match):
    e, y, angles = _good()
    with pytest.raises(error, match=match):
        call_with(circular_cse, dict(embeddings=e, labels=y, label_angles=angles), kwargs)


def test_error_device_mismatch():
    e, y, angles = _good()
    with pytest.raises(ValueError, match="label_angles must be on device"):
        circular_cse(e, y, angles.to("meta"))
