"""The package's layers hold: no module imports another layer's private module (spherekit.<layer>._<name>).
Package-level internals (spherekit._atomic, spherekit._backend, spherekit._store) are shared by every layer."""

from __future__ import annotations

import ast
from pathlib import Path

import spherekit

ROOT = Path(spherekit.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]  # `from pkg import _mod`
    return out


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "spherekit" and not parts[1].startswith("_") else None


def test_no_layer_imports_another_layers_private_module():
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        own = _layer(_module_name(path))
        for line, module in _imported(path):
            parts = module.split(".")
            private = any(p.startswith("_") and not p.startswith("__") for p in parts[2:])
            if _layer(module) not in (None, own) and private:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_a_private_import(tmp_path):
    """The resolver turns a relative import into the absolute name the check tests."""
    probe = ROOT / "losses" / "verifier_mnrl.py"
    names = {m for _, m in _imported(probe)}
    assert "spherekit.nn.Verifier" in names and "spherekit.ops.checks" in names
