"""Two-stage retrieval ("Training for Compositional Sensitivity Reduces Dense Retrieval Generalization",
arXiv:2604.16351): pooled-cosine top-K with faiss, then verifier re-ranking; nDCG@10 / Acc@1."""

from .index import PooledIndex, SearchResult, exact_search, faiss_gpu_available
from .token_store import PaddedTokenStore, RaggedTokenStore
from .two_stage import TwoStageResult, TwoStageRetriever, evaluate, rerank

__all__ = [
    "PaddedTokenStore",
    "PooledIndex",
    "RaggedTokenStore",
    "SearchResult",
    "TwoStageResult",
    "TwoStageRetriever",
    "evaluate",
    "exact_search",
    "faiss_gpu_available",
    "rerank",
]
