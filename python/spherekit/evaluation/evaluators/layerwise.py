"""Per-layer retrieval and geometry ("Principles of Concept Representation in Sentence Encoders" (arXiv:2606.06994)
section 5.1, Figure 3): for every hidden layer l, the masked mean-pooled embeddings z^(l)
(spherekit.evaluation.encode.encode_layers) of queries and pool; MRR of the relevant pool items and anisotropy of
z^(l) over queries and pool together. Layer 0 is the embedding layer, layer L the final transformer layer (its mean
pool is the B0 readout)."""

from __future__ import annotations

import torch

from ..encode import encode_layers
from ..geometry import anisotropy, resampled_anisotropy
from ._base import SpherekitEvaluator, apply_limit, split_test
from .concept import build_pools
from .retrieval import first_relevant_rank


class LayerwiseEvaluator(SpherekitEvaluator):
    """Args: queries, corpus, relevant (per query a set / dict of corpus indices); layers (indices to keep,
    default all); n_pairs / seed for anisotropy; resamples > 0 also keeps, per layer, the queries' first relevant
    ranks and that many bootstrap replicates of the anisotropy (geometry.resampled_anisotropy: the same resamples
    at every layer) in last_details["ranks"] / ["anisotropy replicates"], for paired bootstraps across layers and
    models. Returns "MRR (layer l)" and "anisotropy (layer l)"."""

    def __init__(self, queries, corpus, relevant, *, layers=None, n_pairs: int = 10_000, seed: int = 0,
                 resamples: int = 0, name: str = "layerwise", batch_size: int = 32, show_progress: bool = False):
        super().__init__(name=name, batch_size=batch_size, show_progress=show_progress)
        if len(relevant) != len(queries) or not queries or not corpus:
            raise ValueError(f"need non-empty queries and corpus and one relevant entry per query, got "
                             f"{len(queries)} queries, {len(corpus)} corpus items, {len(relevant)} relevant entries")
        self.queries, self.corpus, self.relevant = list(queries), list(corpus), list(relevant)
        self.layers = None if layers is None else [int(x) for x in layers]
        if resamples < 0:
            raise ValueError(f"resamples must be >= 0, got {resamples}")
        self.n_pairs, self.seed, self.resamples = n_pairs, seed, resamples

    def get_config_dict(self):
        return {"n_queries": len(self.queries), "n_corpus": len(self.corpus), "layers": self.layers,
                "n_pairs": self.n_pairs, "seed": self.seed}

    def compute_metrics(self, model) -> dict[str, float]:
        q = encode_layers(model, self.queries, batch_size=self.batch_size, show_progress=self.show_progress)
        d = encode_layers(model, self.corpus, batch_size=self.batch_size, show_progress=self.show_progress)
        layers = self.layers if self.layers is not None else list(range(q.shape[0]))
        bad = [l for l in layers if not 0 <= l < q.shape[0]]
        if bad:
            raise ValueError(f"layers must lie in [0, {q.shape[0] - 1}] for this model, got {bad}")
        mrr, aniso, ranks, replicates = {}, {}, {}, {}
        for l in layers:
            ranks[l] = first_relevant_rank(q[l], d[l], self.relevant)
            mrr[l] = float((1.0 / ranks[l].double()).mean())
            x = torch.cat([q[l], d[l]])
            aniso[l] = anisotropy(x, self.n_pairs, self.seed)
            if self.resamples:
                replicates[l] = resampled_anisotropy(x, self.resamples, n_pairs=self.n_pairs, seed=self.seed)
        self.last_details = {"layers": layers, "MRR": mrr, "anisotropy": aniso}
        if self.resamples:
            self.last_details.update({"ranks": {l: r.tolist() for l, r in ranks.items()},
                                      "anisotropy replicates": replicates})
        self.primary_metric = f"MRR (layer {layers[-1]})"
        return {**{f"MRR (layer {l})": v for l, v in mrr.items()}, **{f"anisotropy (layer {l})": v for l, v in aniso.items()}}

    def write_plots(self, out_dir) -> list[str]:
        if not self.last_details:
            return []
        from ..plots import plot_layer_curves

        layers = self.last_details["layers"]
        out = []
        for key in ("MRR", "anisotropy"):
            out.append(str(plot_layer_curves({key: [self.last_details[key][l] for l in layers]}, layers,
                                             f"{out_dir}/{self.name}_{key.lower()}_by_layer.png", ylabel=key,
                                             title=f"{key} by layer")))
        return out


def make_evaluator(split, *, limit: int | None = None, seed: int = 0, batch_size: int = 32, **options):
    """Per-layer term-to-definition MRR and anisotropy on split.test (see spherekit.evaluation.suites)."""
    terms, defs, t2d, _, _, _ = build_pools(apply_limit(split_test(split, "layerwise"), limit))
    return LayerwiseEvaluator(terms, defs, t2d, seed=seed, batch_size=batch_size, **options)
