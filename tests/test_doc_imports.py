"""Every name the README and the docs import from puffgm exists: each ``from puffgm... import ...`` line
of their code blocks imports, and names it from a module's ``__all__``."""

import importlib
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FENCE = re.compile(r"```(?:python|pycon)?\n(.*?)```", re.S)
IMPORT = re.compile(r"^\s*(?:>>> )?from (puffgm[\w.]*) import ([\w, ()]+)", re.M)


def _imports():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            for module, names in IMPORT.findall(block):
                for name in names.replace("(", "").replace(")", "").split(","):
                    if name.strip():
                        yield f"{path.relative_to(ROOT)}: from {module} import {name.strip()}", module, name.strip()


@pytest.mark.parametrize("line,module,name", list(_imports()), ids=lambda v: v if " import " in str(v) else "")
def test_a_documented_import_works_and_is_public(line, module, name):
    mod = importlib.import_module(module)
    assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None, line
    public = getattr(mod, "__all__", None)
    assert public is None or name in public or importlib.util.find_spec(f"{module}.{name}") is not None, \
        f"{line}: {name} is not in {module}.__all__"
