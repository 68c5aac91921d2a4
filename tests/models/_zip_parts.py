"""Stand-ins for the five PyPI parts of all-mpnet-base-v2: a zip cut into consecutive part files."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def zip_bytes(members: dict) -> bytes:
    """A zip archive holding {name: str or bytes}."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def split_parts(folder: Path, data: bytes, n: int = 3) -> list[Path]:
    """`data` cut into n part files folder/all-mpnet-base-v2.zip.001.. (concatenated, they are `data`)."""
    cuts = [len(data) * i // n for i in range(n + 1)]
    parts = []
    for i in range(n):
        p = folder / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        p.write_bytes(data[cuts[i]:cuts[i + 1]])
        parts.append(p)
    return parts
