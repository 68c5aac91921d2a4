"""Geometry diagnostics ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994) Appendix
H): anisotropy (mean cosine over 10,000 seeded random pairs) and effective rank (exp of the entropy of the
normalised singular values) of the model's embeddings of a text set; plots: the random-pair cosine histogram and a
PCA scatter coloured by label."""

from __future__ import annotations

from ..encode import encode
from ..geometry import ANISOTROPY_PAIRS, anisotropy, cosine_pairs, effective_rank, pca_project
from ._base import SpherekitEvaluator, apply_limit, field, split_test


class GeometryEvaluator(SpherekitEvaluator):
    """Args: texts; labels (optional, one per text, colours the PCA plot); n_pairs (10,000); seed;
    center (effective rank of centred embeddings; default False). Returns "anisotropy", "effective rank"."""

    def __init__(self, texts, labels=None, *, n_pairs: int = ANISOTROPY_PAIRS, seed: int = 0, center: bool = False,
                 name: str = "geometry", batch_size: int = 64, show_progress: bool = False, max_plot_points: int = 2000):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.texts = list(texts)
        if len(self.texts) < 2:
            raise ValueError(f"geometry needs at least 2 texts, got {len(self.texts)}")
        if labels is not None and len(labels) != len(self.texts):
            raise ValueError(f"labels has {len(labels)} entries for {len(self.texts)} texts")
        self.labels = list(labels) if labels is not None else None
        self.n_pairs, self.seed, self.center, self.max_plot_points = n_pairs, seed, center, max_plot_points
        self.primary_metric = "effective rank"

    def get_config_dict(self):
        return {"n_texts": len(self.texts), "n_pairs": self.n_pairs, "seed": self.seed, "center": self.center}

    def compute_metrics(self, model) -> dict[str, float]:
        x = encode(model, self.texts, batch_size=self.batch_size, show_progress=self.show_progress)
        self.last_details = {"embeddings": x}
        return {"anisotropy": anisotropy(x, self.n_pairs, self.seed),
                "effective rank": effective_rank(x, center=self.center)}

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_cosine_distributions, plot_projection

        x = self.last_details["embeddings"]
        paths = [plot_cosine_distributions({"random pairs": cosine_pairs(x, self.n_pairs, self.seed)},
                                           f"{out_dir}/{self.name}_random_pair_cosines.png",
                                           title="cosine similarity of random pairs")]
        n = min(len(self.texts), self.max_plot_points)
        coords, ratio = pca_project(x[:n], 2, seed=self.seed)
        labels = self.labels[:n] if self.labels is not None else ["text"] * n
        paths.append(plot_projection(coords, labels, f"{out_dir}/{self.name}_pca.png", title="PCA of embeddings",
                                     explained=ratio))
        return [str(p) for p in paths]


def split_texts(records):
    """Distinct terms and definitions of pair records, with 'term'/'definition' labels."""
    seen: dict[str, str] = {}
    for rec in records:
        seen.setdefault(field(rec, "term"), "term")
        seen.setdefault(field(rec, "definition"), "definition")
    return list(seen), list(seen.values())


def make_evaluator(split, *, limit: int | None = None, seed: int = 0, batch_size: int = 64, **options):
    """Geometry of the distinct terms and definitions of split.test (see spherekit.evaluation.suites)."""
    texts, labels = split_texts(apply_limit(split_test(split, "geometry"), limit))
    return GeometryEvaluator(texts, labels, seed=seed, batch_size=batch_size, **options)
