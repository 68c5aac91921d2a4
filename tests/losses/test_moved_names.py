"""Names that moved out of spherekit.losses stay importable from it, with a DeprecationWarning."""

import pytest

import spherekit.losses
from spherekit.training import verifier as verifier_training


@pytest.mark.parametrize("name", ["TokenTriplets", "TrainResult", "train_verifier"])
def test_verifier_trainer_names_warn_and_point_at_the_training_layer(name):
    with pytest.warns(DeprecationWarning, match=f"spherekit.training.verifier.{name}"):
        moved = getattr(spherekit.losses, name)
    assert moved is getattr(verifier_training, name)
    assert name not in spherekit.losses.__all__


def test_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_loss"):
        spherekit.losses.no_such_loss  # noqa: B018


def test_losses_without_sentence_transformers_say_which_extra():
    import subprocess
    import sys

    code = "import sys; sys.modules['sentence_transformers'] = None; import spherekit.losses"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    last = proc.stderr.strip().splitlines()[-1]  # one line: the extra, what is missing, the pip command
    assert proc.returncode == 1 and last.startswith("ModuleNotFoundError: spherekit.losses needs the [st] extra")
    assert "(sentence-transformers not installed): pip install " in last and last.endswith("[st]'")
