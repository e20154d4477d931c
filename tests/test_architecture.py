"""The package keeps the shape docs/architecture.md describes.

* the layers and the absence of import cycles, as import-linter contracts in
  pyproject.toml (every import counts, also those inside functions);
* at most 14 entries at the top level of the package;
* functions a reader can name: at most 120 lines and at most 8 parameters;
* no module imports another module's private name;
* every public module declares ``__all__``;
* privacy parameters (epsilon, epsilon_puffer, epsilon_dp, budget) are keyword-only in the public API.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "puffgm"
#: puffgm has no (epsilon, delta) mechanism: ``delta`` names the width of region secrets
#: (a secret parameter, positional where natural), so it is not listed here.
PRIVACY_PARAMETERS = {"epsilon", "epsilon_puffer", "epsilon_dp", "budget"}
MAX_LINES = 120
MAX_PARAMETERS = 8


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path, ast.parse(path.read_text())


def _is_public(name: str) -> bool:
    return all(not p.startswith("_") for p in name.split("."))


def _functions(tree):
    """(qualified name, node, public) for every function and method."""
    def walk(node, prefix, public):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pub = public and (not child.name.startswith("_") or child.name == "__init__")
                yield f"{prefix}{child.name}", child, pub
                yield from walk(child, f"{prefix}{child.name}.", False)
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.", public and not child.name.startswith("_"))
    yield from walk(tree, "", True)


def _parameters(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
    return names + [x.arg for x in (a.vararg, a.kwarg) if x is not None]


def test_import_contracts_hold():
    pytest.importorskip("importlinter")
    from importlinter import cli

    root = PACKAGE.parent
    assert cli.lint_imports(config_filename=str(root / "pyproject.toml"), no_cache=True) == 0


def test_top_level_has_at_most_14_entries():
    # modules and packages; the py.typed marker (PEP 561) is data, not an entry of the layout
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and (p.is_dir() or p.suffix == ".py")]
    assert len(entries) <= 14, sorted(entries)


def test_functions_are_short():
    long = [f"{m}.{q} ({fn.end_lineno - fn.lineno + 1} lines)" for m, _, tree in _modules()
            for q, fn, _ in _functions(tree) if fn.end_lineno - fn.lineno + 1 > MAX_LINES]
    assert not long, "\n".join(long)


def test_functions_take_few_parameters():
    many = [f"{m}.{q} ({len(_parameters(fn))})" for m, _, tree in _modules()
            for q, fn, _ in _functions(tree) if len(_parameters(fn)) > MAX_PARAMETERS]
    assert not many, "\n".join(many)


def test_no_module_imports_another_modules_private_name():
    bad = []
    for m, _path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("puffgm") and node.module != m:
                bad += [f"{m} <- {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "\n".join(bad)


def test_every_public_module_declares_all():
    missing = []
    for m, _path, tree in _modules():
        if not _is_public(m) or m.endswith("__main__"):
            continue
        names = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name)}
        if "__all__" not in names:
            missing.append(m)
    assert not missing, "\n".join(missing)


def test_privacy_parameters_are_keyword_only_in_the_public_api():
    positional = []
    for m, _, tree in _modules():
        if not _is_public(m):
            continue
        for q, fn, public in _functions(tree):
            if public:
                a = fn.args
                positional += [f"{m}.{q}({x.arg})" for x in a.posonlyargs + a.args if x.arg in PRIVACY_PARAMETERS]
    assert not positional, "\n".join(positional)


def test_analyses_outside_the_dispatch_are_named_there():
    """Boxes go through the one dispatch; temporal leakage and Blowfish are named in it as analyses outside."""
    from puffgm.api import dispatch
    from puffgm.chains import ChainParameterBox
    from puffgm.chains.kind import ChainBoxKind

    box = ChainParameterBox(p0=(0.2, 0.8), p1=(0.3, 0.7), initial="any", length=5)
    assert isinstance(dispatch.as_prior(box), ChainBoxKind)
    outside = dispatch.__doc__.split("outside this dispatch", 1)[1]
    assert "temporal_leakage" in outside and "puffgm.blowfish" in outside
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    assert "inputs outside the dispatch" in text and "temporal privacy leakage" in text
