"""sentence-transformers compatible losses built on spherekit.ops (needs the ``st`` extra).

Each loss follows sentence-transformers' conventions: ``__init__(model, ...)``,
``forward(sentence_features, labels)``, the math in ``compute_loss_from_embeddings``,
``get_config_dict()`` and a BibTeX ``citation``; every one takes ``backend`` for its op.
The ``Cached*`` losses are gradient-cached (GradCache) versions: their loss stage is ``calculate_loss``.
"""

from . import _requires  # noqa: F401  (first: a clear error when sentence-transformers is missing)
from .._moved import moved_module
from .cached import CachedConceptEquivalenceLoss, CachedMultipleNegativesRankingLoss
from .circular_cse import CircularCSELoss
from .concept_equivalence import ConceptEquivalenceLoss
from .deep_supervision import DeepSupervisionLoss
from .entry_bank import EntryBankLoss
from .multiple_negatives_ranking import MultipleNegativesRankingLoss
from .sincere import SincereLoss, SoftCSELoss
from .verifier_mnrl import VerifierMNRLLoss, verifier_mnrl_loss

__all__ = [
    "CachedConceptEquivalenceLoss",
    "CachedMultipleNegativesRankingLoss",
    "CircularCSELoss",
    "ConceptEquivalenceLoss",
    "DeepSupervisionLoss",
    "EntryBankLoss",
    "MultipleNegativesRankingLoss",
    "SincereLoss",
    "SoftCSELoss",
    "VerifierMNRLLoss",
    "verifier_mnrl_loss",
]

# The verifier trainer is part of the training layer (spherekit.training.verifier); these names
# stay importable from here with a DeprecationWarning.
__getattr__ = moved_module(__name__, "spherekit.training.verifier",
                           ("TokenTriplets", "TrainResult", "train_verifier"))
