"""Test setup. The Triton interpreter must be chosen before anything imports triton or spherekit.kernels: it is on
(TRITON_INTERPRET=1) when no CUDA device is present, so the Triton kernels run on CPU tensors (how they are tested
on machines without a GPU), and off on a GPU, where the kernels compile (triton 3.6's interpreter also fails with
numpy >= 2.4). SPHEREKIT_TRITON_INTERPRET=1 / 0 forces it on / off; an explicit TRITON_INTERPRET is kept.

SPHEREKIT_REQUIRE_CUDA=1 (scripts/gpu_check.sh sets it on a GPU): the session stops at once when spherekit._cuda
does not load or sees no device, and a test that would skip for a missing CUDA extension fails (tests/_cuda.py)."""

import os

import torch

_forced = os.environ.get("SPHEREKIT_TRITON_INTERPRET", "")
if _forced == "1" or (_forced != "0" and not torch.cuda.is_available()):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


def pytest_sessionstart(session):
    if os.environ.get("SPHEREKIT_REQUIRE_CUDA", "0") != "1":
        return
    from tests._cuda import problem

    why = problem()
    if why is None and torch.cuda.is_available():
        from spherekit import _backend

        if _backend.cuda_extension().device_count() < 1:
            why = "spherekit._cuda sees no CUDA device although torch does"
    if why is not None:
        pytest.exit(f"SPHEREKIT_REQUIRE_CUDA=1: {why}", returncode=3)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def full_checks():
    """The test runs inside spherekit.checks("full"): the opt-in value scans (NaN / Inf, index ranges, masks with
    an all-padding row, tensor temperatures) raise their named errors."""
    import spherekit

    with spherekit.checks("full"):
        yield


@pytest.fixture
def one_thread():
    """Tiny models and ops run far faster single-threaded on a shared, busy CPU."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A tiny offline BERT (hidden 32, 2 heads, tests.losses._tiny_model) saved once per session."""
    from tests.losses._tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny_bert")
    build_tiny_model(path)
    return path


@pytest.fixture
def tiny_model(tiny_model_path):
    """A fresh SentenceTransformer loaded from tiny_model_path (tests may train or mutate it)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_path), device="cpu")
