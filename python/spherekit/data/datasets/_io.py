"""Reading helpers shared by the published-format loaders: every format error names file, line and field."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path


class DatasetFormatError(ValueError):
    """A file does not follow its published format. str(): '<file>:<line>: field <name>: <problem>'."""

    def __init__(self, path, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = f"{self.path}:{line}" if line is not None else self.path
        what = f" field {field!r}:" if field is not None else ""
        super().__init__(f"{where}:{what} {problem}")


def require_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    return path


def open_text(path) -> io.TextIOBase:
    """Open a UTF-8 text file, transparently gunzipping *.gz (newline='' for the csv module)."""
    path = require_file(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def read_lines(path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) for every line."""
    with open_text(path) as fh:
        for i, line in enumerate(fh, start=1):
            yield i, line.rstrip("\r\n")


def read_jsonl(path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object is an error."""
    for i, line in read_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(path, i, None, f"not valid JSON ({exc.msg})") from None
        yield i, obj


def read_delimited(path, delimiter: str, *, quoting: int = csv.QUOTE_MINIMAL) -> Iterator[tuple[int, list[str]]]:
    """(line number of the record's first line, fields) via the csv module (quoted fields may span lines)."""
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter, quoting=quoting)
        line = 1
        for row in reader:
            yield line, row
            line = reader.line_num + 1


def get_str(path, line: int, obj: dict, key: str, *, allow_empty: bool = False) -> str:
    if not isinstance(obj, dict):
        raise DatasetFormatError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        raise DatasetFormatError(path, line, key, "missing")
    value = obj[key]
    if not isinstance(value, str):
        raise DatasetFormatError(path, line, key, f"expected a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise DatasetFormatError(path, line, key, "empty")
    return value


def to_float(path, line: int, field: str, text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise DatasetFormatError(path, line, field, f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise DatasetFormatError(path, line, field, f"expected a finite number, got {text!r}")
    return value


def table_rows(path, rows, width: int):
    """(line, row) of the non-blank rows of a table whose header has `width` fields; a row of another width is an
    error naming its line."""
    for line, row in rows:
        if not any(c.strip() for c in row):
            continue
        if len(row) != width:
            raise DatasetFormatError(path, line, None, f"row has {len(row)} fields, header has {width}")
        yield line, row


def check_header(path, header: list[str], required: tuple[str, ...], line: int = 1) -> dict[str, int]:
    """Column index of each required name; a missing column is an error naming it."""
    index = {name.strip(): i for i, name in enumerate(header)}
    for name in required:
        if name not in index:
            raise DatasetFormatError(path, line, name, f"missing column in header {header!r}")
    return index
