"""Every paper plugin (each discovered paper, and the template of docs/new_experiment.md) conforms to the
experiment core: its spec is complete and consistent, its tiny preset runs end to end into a schema-2 card whose
metric keys follow the vocabulary and whose claims are records, a rerun reuses every run, a narrowed selection
(fewer conditions, one seed) reuses every run and retrains nothing, --force redoes a condition, `restore` brings a
card's runs back, and `report` re-renders the same card."""

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

import spherekit.experiments as experiments
from spherekit.cli import main
from spherekit.experiments.harness import card as card_mod
from spherekit.experiments.api.claims import VERDICTS
from spherekit.experiments.api.metrics import invalid_keys, lookup
from spherekit.experiments.api.units import unit_runs
from spherekit.experiments.harness.runner import plan, seeds_of

# not discovered: the template (its folder starts with "_"), and a sixth toy paper written only from
# docs/new_experiment.md, outside the package (found through SPHEREKIT_EXPERIMENTS by its users)
EXTRA = {"template": "spherekit.experiments._template.spec:EXPERIMENT",
         "pooling": "tests.experiments.sixth_paper.spec:EXPERIMENT"}
PAPERS = [*experiments.names(), *EXTRA]
PRESETS = ("tiny", "cpu-small", "cpu", "paper")
OTHER_SPELLINGS = {"train", "trainings", "per_text", "items"}  # a run's trainings go under "training", items "per_item"


@pytest.fixture(autouse=True)
def with_extra_papers(monkeypatch):
    found = {**experiments._found(), **EXTRA}
    monkeypatch.setattr(experiments, "_found", lambda: found)


def _runs_of(experiment, cfg) -> list[str]:
    return [f"{b}/{c}/{'no-seed' if s is None else f'seed-{s}'}" for b, c in plan(experiment, cfg)
            for s in seeds_of(experiment, cfg, c)]


@pytest.mark.parametrize("name", PAPERS)
def test_spec_is_complete_and_consistent(name):
    experiment = experiments.get(name)
    assert experiment.name == name and experiment.title and experiment.citation.strip().startswith("@")
    for part in ("spec", "paper", "run", "figures"):
        assert experiment.has_module(part), f"{name} has no {part}.py"
    package_doc = experiment.module("spec").__doc__ + (experiment.module("run").__doc__ or "")
    assert not re.search(r"\bSeed 0\d\d", package_doc), "cite papers by title, not by seed file"
    assert set(PRESETS) <= set(experiment.presets)
    for preset in experiment.presets:
        cfg = experiment.make_config(preset)
        sources = {f.name: f.metadata.get("source") for f in dataclasses.fields(cfg)}
        assert sources["backbones"] == sources["seeds"] == "selection", (name, preset)
        assert all(isinstance(s, int) for s in cfg.seeds) and cfg.seeds, (name, preset)
        assert set(experiment.selected(cfg)) <= set(experiment.conditions), (name, preset)
    for condition in experiment.conditions.values():
        assert condition.description and set(condition.requires) <= set(experiment.conditions)
    lookup(experiment.main_metric, experiment)
    assert not invalid_keys([c[0] for c in experiment.summary_metrics], experiment)
    ids = [c.id for c in experiment.claims]
    assert len(ids) == len(set(ids)) and all(c.statement and c.source and c.rule for c in experiment.claims)
    for p in experiment.printed:
        assert p.condition in experiment.conditions, (name, p)
        lookup(p.metric, experiment)


@pytest.fixture(scope="module")
def ran(backbone_dir, tmp_path_factory):
    """Each paper's tiny preset, run once: {name: (out folder, card folder)}."""
    done = {}

    def run(name):
        if name not in done:
            out = tmp_path_factory.mktemp(f"conform-{name}")
            assert main(["reproduce", name, "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                         "--no-progress"]) == 0
            done[name] = (out, out / name / "tiny")
        return done[name]

    return run


def _done_stamps(card) -> dict:
    return {str(p.parent.relative_to(card)): p.read_text() for p in card.glob("*/*/*/done")}


@pytest.mark.parametrize("name", PAPERS)
def test_tiny_preset_card(name, ran, backbone_dir):
    out, card = ran(name)
    experiment = experiments.get(name)
    results = json.loads((card / "results.json").read_text())
    assert results["schema"] == card_mod.SCHEMA and results["evaluation"]["main_metric"] == experiment.main_metric
    cfg = experiment.make_config("tiny")
    cfg = dataclasses.replace(cfg, backbones=(str(backbone_dir),))
    assert set(_done_stamps(card)) == {r.replace(str(backbone_dir), "st") for r in _runs_of(experiment, cfg)}
    for unit_id, unit in results["units"].items():
        assert not invalid_keys(unit["metrics"], experiment), (unit_id, invalid_keys(unit["metrics"], experiment)[:3])
        assert [r["seed"] for r in unit["runs"]] == unit["seeds"] and ("spread" in unit) == (len(unit["runs"]) > 1)
    assert {r["verdict"] for r in results["claims"]} <= set(VERDICTS)
    assert {r["id"].split(" (")[0] for r in results["claims"]} == {c.id for c in experiment.claims}
    assert len(results["comparison"]) == len(experiment.printed)
    for unit_id, unit in results["units"].items():  # one run record: trainings and per-item values, one key each
        for run in unit_runs(unit):
            assert not set(run) & OTHER_SPELLINGS, (unit_id, sorted(set(run) & OTHER_SPELLINGS))
            for trained, record in (run.get("training") or {}).items():
                assert isinstance(record, dict) and trained not in {"curve", "probe", "steps", "start"}, \
                    (unit_id, trained)  # {name: record}, not one record
                assert {"steps", "curve", "probe", "start"} & set(record), (unit_id, trained)
            assert isinstance(run.get("per_item", {}), dict)
    report = (card / "report.md").read_text()
    assert "## Claims of the paper, checked here" in report and "## Configuration" in report
    for line in report.splitlines():
        if line.startswith("![") and "](" in line:
            assert (card / line.split("](")[1].rstrip(")")).is_file()


@pytest.mark.parametrize("name", PAPERS)
def test_rerun_and_narrowed_selection_reuse_every_run(name, ran, backbone_dir, capsys):
    out, card = ran(name)
    experiment = experiments.get(name)
    before, units = _done_stamps(card), json.loads((card / "results.json").read_text())["units"]
    args = ["reproduce", name, "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out), "--no-progress"]
    capsys.readouterr()
    assert main(args) == 0
    assert capsys.readouterr().err.count("done earlier (reused") == len(before)
    cfg = experiment.make_config("tiny")
    last = experiment.selected(cfg)[-1]
    assert main(args + ["--conditions", last, "--seed", str(cfg.seeds[0])]) == 0
    err = capsys.readouterr().err
    assert "starting over" not in err and err.count("done earlier (reused") >= 1
    assert _done_stamps(card) == before  # nothing ran again
    assert json.loads((card / "results.json").read_text())["units"].keys() == units.keys()  # the card shows all


@pytest.mark.parametrize("name", PAPERS)
def test_force_redoes_a_condition(name, ran, backbone_dir, capfd):
    """... and under --no-progress the redone runs draw no progress bar (ours or a library's: no 'it/s')."""
    out, card = ran(name)
    experiment = experiments.get(name)
    first = experiment.selected(experiment.make_config("tiny"))[0]
    before = _done_stamps(card)
    capfd.readouterr()
    assert main(["reproduce", name, "--preset", "tiny", "--backbone", str(backbone_dir), "--out", str(out),
                 "--no-progress", "--conditions", first, "--force"]) == 0
    assert "it/s" not in capfd.readouterr().err
    after = _done_stamps(card)
    changed = {k for k in before if after[k] != before[k]}
    assert changed and all(k.split("/")[1] in (first, *_required(experiment, first)) for k in changed)


def _required(experiment, condition) -> set:
    out = set()
    for r in experiment.conditions[condition].requires:
        out |= {r, *_required(experiment, r)}
    return out


@pytest.mark.parametrize("name", PAPERS)
def test_restore_and_report(name, ran, backbone_dir, tmp_path, capsys):
    out, card = ran(name)
    committed = tmp_path / "committed"
    committed.mkdir()
    shutil.copy(card / "results.json", committed / "results.json")
    results = json.loads((committed / "results.json").read_text())
    n_runs = sum(len(u["runs"]) for u in results["units"].values())
    assert main(["reproduce", "restore", str(committed), "--out", str(tmp_path / "out")]) == 0
    assert f"restored {n_runs} finished run(s)" in capsys.readouterr().out
    assert main(["reproduce", name, "--preset", "tiny", "--backbone", str(backbone_dir), "--out",
                 str(tmp_path / "out"), "--no-progress"]) == 0
    assert capsys.readouterr().err.count("done earlier (reused") == n_runs
    again = json.loads((tmp_path / "out" / name / "tiny" / "results.json").read_text())
    metrics = {k: u["metrics"] for k, u in results["units"].items()}
    assert {k: u["metrics"] for k, u in again["units"].items()} == metrics
    # `report` re-judges and re-renders from results.json alone: the same claims and the same report
    shutil.copytree(card, tmp_path / "card")
    (tmp_path / "card" / "report.md").unlink()
    assert main(["reproduce", "report", str(tmp_path / "card")]) == 0
    assert (tmp_path / "card" / "report.md").read_text() == (card / "report.md").read_text()
    assert json.loads((tmp_path / "card" / "results.json").read_text()) == results


def _imports(path, root=None):
    """(module, names) of every import in `path`, relative imports resolved against the package folder `root`'s
    parent (default: the spherekit package's)."""
    import ast

    root = root or ROOT_PACKAGE
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = path.parent
            if node.level:
                for _ in range(node.level - 1):
                    base = base.parent
                parts = list(base.relative_to(root.parent).parts) + (node.module or "").split(".")
                module = ".".join(p for p in parts if p)
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


ROOT_PACKAGE = Path(experiments.__file__).resolve().parents[1]


@pytest.mark.parametrize("name", [*experiments.names(), "_template"])
def test_no_paper_imports_the_harness(name):
    """A paper imports spherekit.experiments.api (and the library), never the harness that runs it."""
    folder = Path(experiments.__file__).parent / name
    bad = []
    for path in sorted(folder.rglob("*.py")):
        for module, names in _imports(path):
            targets = [module] + [f"{module}.{n}" for n in names]
            if any(t.startswith("spherekit.experiments.harness") or t in MOVED_HARNESS for t in targets):
                bad.append(f"{path.relative_to(folder)}: {module} {names}")
    assert not bad, f"{name} imports the harness: {bad}"


def test_the_sixth_paper_imports_only_the_api():
    folder = Path(__file__).parent / "sixth_paper"
    for path in sorted(folder.rglob("*.py")):
        for module, _ in _imports(path, folder.parents[1]):
            assert not module.startswith("spherekit.experiments.harness"), (path.name, module)


def test_the_check_catches_a_harness_import(tmp_path):
    paper = tmp_path / "spherekit" / "experiments" / "fake"
    paper.mkdir(parents=True)
    (paper / "run.py").write_text("from ..harness.card import cached_json\nfrom ..api.files import write_json\n")
    found = [m for m, _ in _imports(paper / "run.py", tmp_path / "spherekit")]
    assert found == ["spherekit.experiments.harness.card", "spherekit.experiments.api.files"]


MOVED_HARNESS = {f"spherekit.experiments.{m}" for m in ("runner", "context", "restore", "card", "index", "cli",
                                                         "gpu_hours")}
