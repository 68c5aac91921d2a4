"""Test setup. TRITON_INTERPRET=1 must be set before anything imports triton or spherekit.kernels, so
the Triton kernels run on CPU tensors (that is how they are tested on machines without a GPU)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


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
