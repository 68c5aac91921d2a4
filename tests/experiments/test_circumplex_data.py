"""What the circumplex reproduction reads and decides per backbone: the authors' released Emolit split as downloaded
(small files in its exact layout), the paper's pooling and head mask per backbone, and the card's departures with
the paper presets' missing parts and predicted GPU time."""

import json
from types import SimpleNamespace

import pytest
from spherekit.cli import main
from spherekit.data.datasets._io import DatasetFormatError
from spherekit.experiments.circumplex.data import load_data
from spherekit.experiments.circumplex.departures import departures, predicted_gpu_hours
from spherekit.experiments.circumplex.models import resolve_causal, resolve_pooling
from spherekit.experiments.circumplex.spec import EXPERIMENT
from spherekit.experiments.api.config import as_dict, with_overrides

LABELS = ("anger", "joy", "trust")
# rows as in the authors' dataset/emolit_12labels_*.csv: header text,sentiment; csv-quoted texts holding commas and
# doubled quotes; grouped by label, alphabetically
ROW = ('"he said, with a snort of {lab} number {i}, when Jake went down.",{lab}',
       '"A strange place {i}, sir,"" said he, all {lab}; ""ever here before?""",{lab}',
       'Plain text {i} without any quote for {lab}.,{lab}')


def _released(path, split: str, n: int, header: str = "text,sentiment"):
    rows = [ROW[i % 3].format(lab=lab, i=f"{split}{i}") for lab in LABELS for i in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")


def _write_release(folder, train="emolit_12labels_train.csv", test="emolit_12labels_test.csv", **kw):
    _released(folder / train, "train", 6, **kw)
    _released(folder / test, "test", 3, **kw)


def _load(data_dir, **overrides):
    cfg = with_overrides(EXPERIMENT.make_config("tiny"), {"data_dir": str(data_dir), "n_train_per_label": 5,
                                                          "n_test_per_label": 3, **overrides})
    return load_data(cfg)


@pytest.mark.parametrize("where", ["dataset", "."])
def test_released_split_as_downloaded(tmp_path, where):
    """The authors' files in their repository's dataset/ folder: --data-dir takes the clone or the folder."""
    _write_release(tmp_path / "EmpiricalCircumplexModel" / "dataset")
    root = tmp_path / "EmpiricalCircumplexModel"
    data = _load(root if where == "." else root / "dataset")
    assert data.labels == ("joy", "anger", "trust")  # by angle: 30, 120, 330
    assert data.stats["train_per_label"] == {lab: 5 for lab in LABELS}
    assert data.stats["test_per_label"] == {lab: 3 for lab in LABELS}
    texts = {it.text for it in data.train + data.test}
    assert any(t.startswith("he said, with a snort of") for t in texts)  # the quoted comma kept
    assert any('"ever here before?"' in t for t in texts)  # doubled quotes read as one
    assert not {it.text for it in data.train} & {it.text for it in data.test}


def test_released_split_as_emolit_and_renamed(tmp_path):
    _write_release(tmp_path / "rel")
    emolit = _load(tmp_path / "rel", dataset="emolit")  # the released split is Emolit's, already labelled
    assert emolit.labels == ("joy", "anger", "trust") and emolit.stats["n_test"] == 9
    _write_release(tmp_path / "renamed", train="train.csv", test="test.csv")  # the files renamed: same columns
    assert _load(tmp_path / "renamed").stats["train_per_label"] == {lab: 5 for lab in LABELS}
    assert _load(tmp_path / "renamed", dataset="emolit").stats["n_train"] == 15


def test_label_column_given_or_missing(tmp_path):
    _write_release(tmp_path / "own", train="train.csv", test="test.csv", header="text,emotion")
    with pytest.raises(DatasetFormatError, match="'label'.*missing column.*emotion"):
        _load(tmp_path / "own")
    assert _load(tmp_path / "own", label_column="emotion").stats["n_test"] == 9


def test_released_split_end_to_end(backbone_dir, tmp_path):
    _write_release(tmp_path / "clone" / "dataset")
    out = tmp_path / "out"
    assert main(["reproduce", "circumplex", "--preset", "tiny", "--backbone", str(backbone_dir), "--data-dir",
                 str(tmp_path / "clone"), "--conditions", "Pretrained", "--set", "n_train_per_label=5",
                 "--set", "n_test_per_label=3", "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "circumplex" / "tiny" / "results.json").read_text())
    assert results["data"]["labels"] == ["joy", "anger", "trust"] and results["data"]["n_test"] == 9


# ------------------------------------------------------------------ pooling and head mask per backbone

def _backbone(name: str, architectures=(), is_decoder=False):
    config = SimpleNamespace(_name_or_path=name, architectures=list(architectures), is_decoder=is_decoder)
    return [SimpleNamespace(auto_model=SimpleNamespace(config=config))]


@pytest.mark.parametrize("name, arch, pooling, causal", [
    ("intfloat/multilingual-e5-large", ["XLMRobertaModel"], "cls", False),
    ("mixedbread-ai/mxbai-embed-large-v1", ["BertModel"], "cls", False),
    ("Qwen/Qwen3-Embedding-4B", ["Qwen3ForCausalLM"], "last", True),
    ("nvidia/llama-embed-nemotron-8b", ["LlamaBidirectionalModel"], "mean", False),
    ("meta-llama/Llama-3.2-3B", ["LlamaForCausalLM"], "last", True),
    ("allenai/Olmo-3-1025-7B", ["Olmo3ForCausalLM"], "last", True),
    ("/models/all-MiniLM-L6-v2", ["BertModel"], "cls", False),  # BERT-like: the paper's [CLS] rule
    ("/models/some-gpt", ["GPT2LMHeadModel"], "last", True),
    ("/models/some-decoder", ["MistralForCausalLM"], "last", True),  # unknown name: by architecture
])
def test_paper_pooling_and_mask_per_backbone(name, arch, pooling, causal):
    b = _backbone(name, arch)
    assert resolve_pooling("auto", b) == pooling and resolve_causal("auto", b) is causal
    assert resolve_pooling("mean", b) == "mean" and resolve_causal("bidirectional", b) is False
    assert resolve_causal("causal", b) is True


# ------------------------------------------------------------------ departures and the GPU prediction

def _results(preset: str, **config) -> dict:
    return {"preset": preset, "config": {**as_dict(EXPERIMENT.make_config(preset)), **config}, "device": "cuda",
            "data": {"source": "/data/emolit"}, "units": {}}


def test_paper_presets_state_what_is_missing_and_a_predicted_gpu_time():
    for preset in ("paper", "paper-finetuned"):
        text = " ".join(departures(_results(preset)))
        assert "missing for a full reproduction" in text and "PersonaGen is not released" in text
        assert "predicted GPU time (a prediction from FLOP counts, not a measurement)" in text
        low, high = predicted_gpu_hours(_results(preset)["config"])
        assert 0 < low < high < 24
    small = " ".join(departures(_results("cpu-small")))
    assert "predicted GPU time" not in small and "pooling of the heads" in small and "verdict rules" in small
    assert predicted_gpu_hours({**_results("paper")["config"], "backbones": ["my-model"]}) is None
    one = predicted_gpu_hours({**_results("paper")["config"], "backbones": ["meta-llama/Llama-3.2-3B"]})
    assert one[1] < predicted_gpu_hours(_results("paper")["config"])[1]  # fewer backbones, less time
    old = " ".join(departures(_results("cpu-small", pretrained_pooling="backbone")))
    assert "C5 compares two poolings" in old
