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


def test_mkdocs_marks_mathematics_up_for_the_build_to_typeset():
    config = (ROOT / "mkdocs.yml").read_text()
    assert "pymdownx.arithmatex" in config and "generic: true" in config
    assert "extra_javascript" not in config  # no script: formulas are MathML in the pages


# ------------------------------------------------------------------ a site that renders offline


def _hooks():
    import sys

    pytest.importorskip("mkdocs")
    pytest.importorskip("latex2mathml")

    sys.path.insert(0, str(ROOT))
    try:
        from docs_tools import hooks
    finally:
        sys.path.remove(str(ROOT))
    return hooks


def test_the_site_needs_no_network_and_works_from_disk():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^use_directory_urls: false$", config, re.M)  # links end in .html: file:// works
    assert "http://" not in config.split("nav:")[0].replace("site_url", "") and "https://" not in config
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text()
    assert "pre-wrap" in css  # wide command blocks wrap
    docs_extra = re.search(r"^docs = \[(.*?)\]$", (ROOT / "pyproject.toml").read_text(), re.M | re.S)[1]
    assert "latex2mathml" in docs_extra


def test_formulas_become_mathml_with_their_tex_kept():
    typeset = _hooks().typeset
    page = ('<p>a <span class="arithmatex">\\(t_\\alpha = b \\ln(1/\\alpha)\\)</span> b</p>'
            '<div class="arithmatex">\\[\n\\Pr[|Z| &lt; t] \\ge 1 - \\alpha\n\\]</div>')
    out = typeset(page)
    assert "\\(" not in out and "\\[" not in out
    assert out.count("<math") == 2 and 'display="block"' in out and 'display="inline"' in out
    assert "<msub><mi>t</mi><mi>&#x003B1;</mi></msub>" in out
    assert '<annotation encoding="application/x-tex">\\Pr[|Z| &lt; t] \\ge 1 - \\alpha</annotation>' in out


@pytest.mark.parametrize("tex", ["\\foo x", "a,\\\nb", "\\begin{aligned} a &= b \\end{aligned}", "\\left( a"])
def test_a_formula_that_does_not_typeset_fails_the_build(tex):
    with pytest.raises(ValueError, match="cannot be typeset"):
        _hooks().typeset(f'<span class="arithmatex">\\({tex}\\)</span>')


def test_a_display_formula_left_as_text_fails_the_build():
    with pytest.raises(ValueError, match="left as raw text"):
        _hooks().typeset("<p>$$\nx = 1\n$$</p>")
    assert "$$" in _hooks().typeset("<pre><code>echo $$</code></pre>")  # a shell's $$ in code is fine


def test_a_strict_build_renders_formulas_as_mathml_and_links_as_html_files(tmp_path):
    """Build a two-page site with the project's configuration (INHERIT) and its formula hook, strictly."""
    import subprocess
    import sys

    pytest.importorskip("mkdocs")
    pytest.importorskip("latex2mathml")
    docs = tmp_path / "docs"
    (docs / "stylesheets").mkdir(parents=True)
    (docs / "stylesheets" / "extra.css").write_text((ROOT / "docs" / "stylesheets" / "extra.css").read_text())
    (docs / "index.md").write_text("# Home\n\nThe noise: $\\mathrm{Lap}(b)$; see [the bound](bound.md#the-bound).\n")
    (docs / "bound.md").write_text("# Bound\n\n## The bound\n\n$$\n\\epsilon_{DP} \\le \\frac{\\epsilon - a}{b}\n$$\n")
    (tmp_path / "hooks.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                                       "from docs_tools.hooks import on_page_content  # noqa: E402,F401\n")
    (tmp_path / "mkdocs.yml").write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\n"
        f"hooks: [{tmp_path / 'hooks.py'}]\nplugins: [search]\nnav: [index.md, bound.md]\n")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                          str(tmp_path / "mkdocs.yml")], capture_output=True, text=True,
                         env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=120)
    assert run.returncode == 0, run.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    bound = (tmp_path / "site" / "bound.html").read_text()  # a file, not bound/index.html
    assert 'href="bound.html#the-bound"' in home
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in home
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in bound and "<mfrac>" in bound
    assert "mathjax" not in (home + bound).lower()


def test_doctests_outside_examples_render_as_code(package):
    doc = package.docstring.value  # the package docstring: the API index's first paragraph
    assert "```python\n>>> import puffgm" in doc


def test_math_roles_become_formulas(package):
    assert "$t_\\alpha$" in package["core.accuracy"].docstring.value
    left = [o.path for o in _objects(package) if o.docstring is not None and ":math:`" in o.docstring.value]
    assert left == []


def test_no_returns_section_has_an_empty_description(package):
    """Every numpydoc Returns item of the documented API says what it is, not only its type."""
    from griffe import DocstringSectionKind

    empty = []
    for obj in _objects(package):
        if obj.docstring is None or not obj.is_public or obj.path.startswith(("puffgm.cli", "puffgm.experiments")):
            continue
        for section in obj.docstring.parse("numpy"):
            if section.kind is DocstringSectionKind.returns:
                empty += [obj.path for item in section.value if not item.description.strip()]
    assert empty == []
