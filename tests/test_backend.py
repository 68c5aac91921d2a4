"""Backend selection (spherekit._backend) and spherekit.info()."""

import pytest
import torch

import spherekit
from spherekit import _backend

CPU = torch.device("cpu")
SUPPORTED = ("triton", "cpu", "reference")


def test_auto_on_cpu_tensors_is_the_chunked_cpu_path(monkeypatch):
    monkeypatch.delenv("SPHEREKIT_BACKEND", raising=False)
    assert _backend.resolve("op", "auto", CPU, SUPPORTED) == "cpu"


def test_triton_on_cpu_needs_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _backend.resolve("op", "triton", CPU, SUPPORTED) == "triton"
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RuntimeError, match="op: backend 'triton' cannot run here: triton needs CUDA tensors"):
        _backend.resolve("op", "triton", CPU, SUPPORTED)


def test_unsupported_and_unknown_backends_are_named():
    with pytest.raises(ValueError, match="op: backend 'cuda' is not implemented"):
        _backend.resolve("op", "cuda", CPU, SUPPORTED)
    with pytest.raises(ValueError, match="backend must be one of"):
        _backend.resolve("op", "fast", CPU, SUPPORTED)


def test_environment_replaces_auto_only(monkeypatch):
    monkeypatch.setenv("SPHEREKIT_BACKEND", "reference")
    assert _backend.resolve("op", "auto", CPU, SUPPORTED) == "reference"
    assert _backend.resolve("op", "cpu", CPU, SUPPORTED) == "cpu"


def test_cuda_backend_needs_cuda_tensors():
    ok, why = _backend.usable("cuda", CPU)
    assert not ok and "needs CUDA tensors" in why


def test_info_reports_versions_backends_and_extensions(capsys):
    result = spherekit.info()
    printed = capsys.readouterr().out
    assert result["versions"]["torch"] == torch.__version__
    assert set(result["backends"]) == {"triton", "cuda", "cpu", "reference"}
    assert result["backends"]["cpu"]["usable"] is True
    assert isinstance(result["extensions"]["spherekit._C"], dict), "the C++ extension must be built"
    assert result["extensions"]["spherekit._C"]["version"] == spherekit.__version__
    assert "backends" in printed and "spherekit._C" in printed
