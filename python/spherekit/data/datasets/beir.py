"""BEIR / NanoBEIR retrieval datasets in the BEIR layout ("Training for Compositional Sensitivity Reduces Dense
Retrieval Generalization" (arXiv:2604.16351) evaluates NanoBEIR with nDCG@10, Acc@1).

A dataset folder holds
    corpus.jsonl        {"_id": str, "title": str (may be empty or absent), "text": str}  one per line
    queries.jsonl       {"_id": str, "text": str}
    qrels/<split>.tsv   header "query-id<TAB>corpus-id<TAB>score", then one judgement per line (int score)
NanoBEIR is thirteen such folders (NanoNQ, NanoSciFact, ...) under one root: load_nanobeir(root).
A document's text for encoding is "title text" (BEIR's convention; the title is skipped when empty).
Judgements with score <= 0 are not relevant; queries without a relevant judgement are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._io import DatasetFormatError, check_header, get_str, read_lines, read_jsonl, require_file


@dataclass
class BeirData:
    name: str
    corpus: dict[str, str]                      # doc id -> "title text"
    queries: dict[str, str]                     # query id -> text (only queries with relevant docs)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)  # query id -> {doc id: score > 0}

    def retrieval_inputs(self):
        """-> (query texts, corpus texts, relevant: per query {corpus index: score}) for RetrievalEvaluator."""
        doc_ids = list(self.corpus)
        index = {d: i for i, d in enumerate(doc_ids)}
        qids = list(self.queries)
        relevant = [{index[d]: s for d, s in self.qrels[q].items()} for q in qids]
        return [self.queries[q] for q in qids], [self.corpus[d] for d in doc_ids], relevant


def _load_corpus(path) -> dict[str, str]:
    corpus: dict[str, str] = {}
    for line, obj in read_jsonl(path):
        doc_id = get_str(path, line, obj, "_id")
        text = get_str(path, line, obj, "text", allow_empty=True)
        title = obj.get("title", "") or ""
        if not isinstance(title, str):
            raise DatasetFormatError(path, line, "title", f"expected a string, got {type(title).__name__}")
        full = f"{title} {text}".strip() if title.strip() else text.strip()
        if not full:
            raise DatasetFormatError(path, line, "text", "empty document (no title and no text)")
        if doc_id in corpus:
            raise DatasetFormatError(path, line, "_id", f"duplicate id {doc_id!r}")
        corpus[doc_id] = full
    return corpus


def _load_queries(path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line, obj in read_jsonl(path):
        qid = get_str(path, line, obj, "_id")
        if qid in queries:
            raise DatasetFormatError(path, line, "_id", f"duplicate id {qid!r}")
        queries[qid] = get_str(path, line, obj, "text").strip()
    return queries


def load_qrels(path) -> dict[str, dict[str, int]]:
    lines = read_lines(path)
    try:
        hline, header = next(lines)
    except StopIteration:
        raise DatasetFormatError(path, 1, None, "empty file (expected the header query-id, corpus-id, score)") from None
    cols = check_header(path, header.split("\t"), ("query-id", "corpus-id", "score"), hline)
    qrels: dict[str, dict[str, int]] = {}
    for line, text in lines:
        if not text.strip():
            continue
        parts = text.split("\t")
        if len(parts) < 3:
            raise DatasetFormatError(path, line, "score", f"expected 3 tab-separated fields, got {len(parts)}")
        try:
            score = int(float(parts[cols["score"]]))
        except ValueError:
            raise DatasetFormatError(path, line, "score", f"expected an integer, got {parts[cols['score']]!r}") from None
        if score > 0:
            qrels.setdefault(parts[cols["query-id"]], {})[parts[cols["corpus-id"]]] = score
    return qrels


def load_beir(folder, split: str = "test", *, name: str | None = None) -> BeirData:
    folder = Path(folder)
    corpus = _load_corpus(require_file(folder / "corpus.jsonl"))
    queries = _load_queries(require_file(folder / "queries.jsonl"))
    qrels_path = require_file(folder / "qrels" / f"{split}.tsv")
    qrels = load_qrels(qrels_path)
    for qid, docs in qrels.items():
        if qid not in queries:
            raise DatasetFormatError(qrels_path, None, "query-id", f"{qid!r} is not in queries.jsonl")
        missing = [d for d in docs if d not in corpus]
        if missing:
            raise DatasetFormatError(qrels_path, None, "corpus-id", f"{missing[0]!r} (query {qid!r}) is not in corpus.jsonl")
    if not qrels:
        raise DatasetFormatError(qrels_path, None, "score", "no relevant judgement (score > 0)")
    kept = {q: t for q, t in queries.items() if q in qrels}
    return BeirData(name or folder.name, corpus, kept, qrels)


def load_nanobeir(root, split: str = "test", names=None) -> dict[str, BeirData]:
    """Every BEIR-layout subfolder of root (those holding a corpus.jsonl), or the given names."""
    root = Path(root)
    if names is None:
        names = sorted(p.name for p in root.iterdir() if (p / "corpus.jsonl").is_file()) if root.is_dir() else []
        if not names:
            raise FileNotFoundError(f"no dataset folders with corpus.jsonl under {root}")
    return {n: load_beir(root / n, split, name=n) for n in names}
