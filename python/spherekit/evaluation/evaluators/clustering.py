"""Clustering of labelled texts ("Mapping the Circumplex of Affect" (arXiv:2601.06575) section 4.2): V-measure of
spherical k-means (k = number of labels, 10 initialisations, minimum inertia) and, given a label-distance matrix
such as the circumplex distance, CD-r (eq. 10-11). Plots: PCA and MDS scatters of the embeddings coloured by
label."""

from __future__ import annotations

from ..clustering import cd_r, clustering_v_measure
from ..encode import encode
from ..geometry import mds_project, pca_project
from ._base import SpherekitEvaluator


class ClusteringEvaluator(SpherekitEvaluator):
    """Args: texts, labels (one per text); label_distance (E, E) over label_order (default: sorted
    distinct labels) for CD-r, optional; n_init (10); seed. Returns "V-measure" and, with a distance, "CD-r"."""

    def __init__(self, texts, labels, *, label_distance=None, label_order=None, n_init: int = 10, seed: int = 0,
                 name: str = "clustering", batch_size: int = 64, show_progress: bool = False, max_plot_points: int = 1500):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        self.texts, self.labels = list(texts), list(labels)
        if len(self.texts) != len(self.labels) or len(self.texts) < 2:
            raise ValueError(f"texts and labels need equal length >= 2, got {len(self.texts)} and {len(self.labels)}")
        self.label_distance, self.label_order = label_distance, label_order
        self.n_init, self.seed, self.max_plot_points = n_init, seed, max_plot_points
        self.primary_metric = "V-measure"

    def get_config_dict(self):
        return {"n_texts": len(self.texts), "n_labels": len(set(self.labels)), "n_init": self.n_init,
                "seed": self.seed, "cd_r": self.label_distance is not None}

    def compute_metrics(self, model) -> dict[str, float]:
        x = encode(model, self.texts, batch_size=self.batch_size, show_progress=self.show_progress)
        self.last_details = {"embeddings": x}
        out = {"V-measure": clustering_v_measure(x, self.labels, n_init=self.n_init, seed=self.seed)}
        if self.label_distance is not None:
            out["CD-r"] = cd_r(x, self.labels, self.label_distance, self.label_order)
        return out

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_projection

        n = min(len(self.texts), self.max_plot_points)
        x, labels = self.last_details["embeddings"][:n], self.labels[:n]
        coords, ratio = pca_project(x, 2, seed=self.seed)
        paths = [plot_projection(coords, labels, f"{out_dir}/{self.name}_pca.png", title="PCA", explained=ratio),
                 plot_projection(mds_project(x, 2, seed=self.seed), labels, f"{out_dir}/{self.name}_mds.png",
                                 title="MDS (cosine distance)")]
        return [str(p) for p in paths]
