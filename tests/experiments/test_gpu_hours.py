"""The `paper` presets' predicted GPU time comes from the committed GPU measurements (spherekit.experiments.harness.gpu_hours):
read from every <gpu>_paper_hours.csv's total rows, stated on a `paper` card and by `reproduce list`, and absent
(never invented) where no GPU timed a paper."""

import csv

import pytest

import spherekit.experiments as experiments
from spherekit.experiments.harness import card
from spherekit.experiments.harness import gpu_hours

FIELDS = ["paper", "backbone", "kind", "sequences", "tokens", "steps", "step_s", "hours", "status", "basis"]


def _write(root, tag, rows):
    folder = root / gpu_hours.GPU_RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{tag}{gpu_hours.SUFFIX}").open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: "" for k in FIELDS} | r)


def test_only_ok_total_rows_of_the_paper_count_one_per_gpu(tmp_path):
    _write(tmp_path, "h200", [dict(paper="toy", backbone="m", kind="train", hours="0.5", status="ok"),
                              dict(paper="toy", backbone="all", kind="total", hours="1.25", status="ok"),
                              dict(paper="other", backbone="all", kind="total", hours="9", status="ok")])
    _write(tmp_path, "h100", [dict(paper="toy", backbone="all", kind="total", hours="2", status="failed")])
    found = gpu_hours.predictions("toy", tmp_path)
    assert [(p.gpu, p.hours, p.source) for p in found] == [
        ("NVIDIA H200", 1.25, "benches/results/gpu/h200_paper_hours.csv")]
    line = gpu_hours.describe("toy", tmp_path)
    assert "1.25 h on an NVIDIA H200" in line and "a prediction, not a run" in line


def test_no_measurement_means_no_claim(tmp_path):
    assert gpu_hours.predictions("toy", tmp_path) == []
    assert gpu_hours.describe("toy", tmp_path) is None


@pytest.mark.parametrize("hours, text", [(0.0, "< 0.01 h"), (0.004, "< 0.01 h"), (6.521, "6.52 h")])
def test_hours_text(hours, text):
    assert gpu_hours.hours_text(hours) == text


@pytest.mark.parametrize("name", experiments.names())
def test_every_papers_paper_card_states_the_measured_prediction(name):
    """Each paper preset's card header carries the predicted GPU time of the committed H200 run; other presets don't."""
    exp = experiments.get(name)
    results = {"experiment": name, "preset": "paper", "config": {}, "config_sources": [], "data": {}, "units": {}}

    class OnlyPrediction:  # the paper's own departures are tested with the paper; here only the core's line
        departures = staticmethod(lambda results: [])

    text = card.departures_section(OnlyPrediction, results)
    assert "paper" in exp.presets
    assert "predicted GPU time of the `paper` preset: " in text and "on an NVIDIA H200" in text
    smaller = card.departures_section(OnlyPrediction, {**results, "preset": "cpu-small"})
    assert "predicted GPU time of the `paper` preset" not in smaller
