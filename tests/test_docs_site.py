"""The API reference's docstring rewriting (docs_tools/griffe_sphinx_roles.py): links that render, each object once."""

import pathlib
import re

import pytest

griffe = pytest.importorskip("griffe")

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def package():
    import sys

    sys.path.insert(0, str(ROOT))
    try:
        from docs_tools.griffe_sphinx_roles import SphinxRoles
    finally:
        sys.path.remove(str(ROOT))
    return griffe.load("puffgm", search_paths=[str(ROOT)], extensions=griffe.load_extensions(SphinxRoles()))


def _objects(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member, seen)


def test_no_sphinx_role_is_left_in_any_docstring(package):
    role = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|exc|obj|const):`")
    left = [o.path for o in _objects(package) if o.docstring is not None and role.search(o.docstring.value)]
    assert left == []


def test_a_role_in_a_parameter_type_becomes_a_plain_name(package):
    doc = package["api.dispatch.calibrate"].docstring.value
    assert "prior : PriorKind or anything as_prior accepts" in doc
    assert "[`as_prior()`][puffgm.api.dispatch.as_prior]" not in doc.split("Parameters")[1].split("\n")[2]


def test_a_package_re_export_is_hidden_so_each_object_is_documented_once(package):
    assert package["api.dispatch.calibrate"].is_public
    assert not package["api"].members["calibrate"].is_public
    assert not package["chains"].members["MQMExact"].is_public
    assert package["exceptions.PuffgmError"].is_public


def test_mkdocs_renders_mathematics_without_downloading_at_build_time():
    config = (ROOT / "mkdocs.yml").read_text()
    assert "pymdownx.arithmatex" in config and "generic: true" in config
    assert (ROOT / "docs" / "javascripts" / "mathjax.js").is_file()
