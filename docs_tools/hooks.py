"""MkDocs hooks of the docs site (mkdocs.yml: ``hooks``): the pages generated at build time.

Nothing is written into docs/; the pages exist only in the build:

* ``index.md`` -- the home page, README.md with its links made relative to docs/;
* ``api/index.md`` -- the top-level entry points of ``import puffgm`` (its lazy
  names), each linked to the page that documents it;
* ``gallery/index.md`` and ``gallery/<example>.md`` -- one page per examples/*.py:
  the module docstring as text, then the whole source (the examples are not run);
  a data file of examples/ is shown on the page of every example that names it.
  The "Gallery" entry of ``nav`` becomes a section with one entry per example.

It also typesets the mathematics at build time: every formula that ``pymdownx.arithmatex``
(generic mode) marks up -- ``$...$`` and ``$$...$$`` in the guides, the same in docstrings,
where ``:math:`...``` roles become ``$...$`` (docs_tools/griffe_sphinx_roles.py) -- is converted
to MathML by ``latex2mathml`` (:func:`typeset`), with its TeX source kept as an annotation.
Browsers render MathML natively, so a page shows typeset mathematics with no script, no font
download and no network, opened from disk or served.  A formula latex2mathml cannot convert,
or converts with a command left as text (``\\foo``, a stray backslash, ``&`` outside a table),
fails the build.
"""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

GALLERY = "gallery"
LINK = re.compile(r"(?P<head>\]\()(?P<target>[^)\s#]+)(?P<tail>[)#\s])")


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _examples(root: Path) -> list[Path]:
    return sorted((root / "examples").glob("*.py"))


# ---------------------------------------------------------------- home page
def home_page(readme: str) -> str:
    """README.md as a page of docs/: ``docs/x.md`` -> ``x.md``, ``examples/y.py`` -> the gallery."""

    def relink(match: re.Match[str]) -> str:
        target = match["target"]
        if "://" in target or target.startswith(("mailto:", "/")):
            return match[0]
        if target.startswith("docs/"):
            target = target.removeprefix("docs/")
        elif target.startswith("examples/") and target.endswith(".py"):
            target = f"{GALLERY}/{Path(target).stem}.md"
        return f"{match['head']}{target}{match['tail']}"

    return LINK.sub(relink, readme)


# ------------------------------------------------------------ entry points
def lazy_names(init: Path) -> dict[str, str]:
    """puffgm's ``_LAZY`` table (name -> module), read from the source: nothing is imported."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_LAZY" for t in node.targets):
            return ast.literal_eval(node.value)
    raise ValueError(f"{init} has no _LAZY table")


def entry_points_page(init: Path) -> str:
    """The names ``import puffgm`` offers, each linked to where the API reference documents it."""
    names = sorted(lazy_names(init).items())
    rows = [f"| [`puffgm.{name}`][{module}.{name}] | `{module}` |" for name, module in names]
    return "\n".join([
        "# API reference",
        "",
        "::: puffgm",
        "    options:",
        "      show_root_heading: false",
        "      members: false",
        "      show_submodules: false",
        "",
        "## Top-level names",
        "",
        "`import puffgm` offers these names; each is imported from its module on first use.",
        "",
        "| name | defined in |",
        "| --- | --- |",
        *rows,
        "",
        "The pages that follow document each public package with its modules.",
        "",
    ])


# ------------------------------------------------------------------ gallery
def _docstring(path: Path) -> tuple[str, str]:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem
    title, _, body = doc.partition("\n")
    return title.strip().rstrip("."), body.strip()


def example_page(path: Path, data_files: list[Path]) -> str:
    """One gallery page: the docstring as text, then the source and the data files it names."""
    title, body = _docstring(path)
    source = path.read_text(encoding="utf-8")
    parts = [f"# {path.name}", "", f"**{title}.**", "", body, ""]
    if f"examples/{path.name}" not in body:
        parts += [f"Run it from a clone of the repository: `python examples/{path.name}`.", ""]
    parts += ["## Source", "", f'```python title="examples/{path.name}"', source.rstrip("\n"), "```", ""]
    for data in data_files:
        if data.name in source:
            lang = data.suffix.lstrip(".") or "text"
            parts += [f"## {data.name}", "", f'```{lang} title="examples/{data.name}"',
                      data.read_text(encoding="utf-8").rstrip("\n"), "```", ""]
    return "\n".join(parts)


def gallery_index(paths: list[Path]) -> str:
    intro = ("The scripts of `examples/`, each with its description and its source. They are not run "
             "when the site is built; run one from a clone with `python examples/NAME.py` (some need the "
             "`examples` extra: `pip install \".[examples]\"`).")
    lines = ["# Gallery", "", intro, "", "| example | what it shows |", "| --- | --- |"]
    for path in paths:
        what = _docstring(path)[0].replace("|", r"\|")
        lines.append(f"| [{path.name}]({path.stem}.md) | {what} |")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------- mathematics
#: What pymdownx.arithmatex writes in generic mode: \( ... \) in a span, \[ ... \] in a div.
INLINE_MATH = re.compile(r'<span class="arithmatex">\\\((?P<tex>.*?)\\\)</span>', re.S)
BLOCK_MATH = re.compile(r'<div class="arithmatex">\s*\\\[(?P<tex>.*?)\\\]\s*</div>', re.S)
MATH_ROOT = re.compile(r"^(?P<open><math[^>]*>)(?P<body>.*)(?P<close></math>)$", re.S)
#: A token latex2mathml left as TeX: an unknown command, a stray backslash, or ``&`` outside a table.
UNTYPESET = re.compile(r"<m(?:i|o|n|text)\b[^>]*>(?P<token>[^<]*(?:\\|&(?!#?\w+;))[^<]*)</m")


def mathml(tex: str, display: bool) -> str:
    """``tex`` (HTML-escaped, as arithmatex leaves it) as a MathML element, its TeX kept as an annotation."""
    from latex2mathml.converter import convert

    source = html.unescape(tex).strip()
    try:
        out = convert(source, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises its own exceptions and plain ones
        raise ValueError(f"the formula {source!r} cannot be typeset: {exc}") from exc
    left = UNTYPESET.search(out)
    if left is not None:
        raise ValueError(f"the formula {source!r} cannot be typeset: {left['token'].strip()!r} is not understood")
    root = MATH_ROOT.match(out)
    if root is None:  # pragma: no cover - latex2mathml always returns one <math> element
        return out
    note = f'<annotation encoding="application/x-tex">{html.escape(source)}</annotation>'
    return f"{root['open']}<semantics>{root['body']}{note}</semantics>{root['close']}"


#: Code, MathML and scripts: where a ``$$`` is not a formula marker.
NOT_PROSE = re.compile(r"<(pre|code|script|math)\b.*?</\1>", re.S)


def typeset(page_html: str) -> str:
    """Every arithmatex formula of a page replaced by its MathML.

    Raises
    ------
    ValueError
        If the page's prose still holds a ``$$`` after the conversion: a display formula that
        Markdown did not hand to arithmatex (a ``$$`` line mis-indented in a list, or not set
        apart by blank lines), which would show as raw TeX.
    """
    page_html = BLOCK_MATH.sub(lambda m: f'<div class="arithmatex">{mathml(m["tex"], True)}</div>', page_html)
    page_html = INLINE_MATH.sub(lambda m: f'<span class="arithmatex">{mathml(m["tex"], False)}</span>', page_html)
    prose = NOT_PROSE.sub("", page_html)
    where = prose.find("$$")
    if where >= 0:
        context = re.sub(r"<[^>]+>", "", prose[max(0, where - 80): where + 80]).strip()
        raise ValueError(f"a $$ display formula was left as raw text (blank lines around it, and indented as "
                         f"its paragraph): ...{context}...")
    return page_html


# -------------------------------------------------------------------- hooks
def on_page_content(html_text: str, page, config, files) -> str:
    """Typeset the page's formulas as MathML (:func:`typeset`)."""
    try:
        return typeset(html_text)
    except ValueError as exc:
        raise ValueError(f"{page.file.src_uri}: {exc}") from None


def on_config(config):
    """Turn the ``Gallery: gallery/index.md`` entry of nav into a section, one entry per example."""
    pages = [f"{GALLERY}/index.md"] + [{p.stem: f"{GALLERY}/{p.stem}.md"} for p in _examples(_root(config))]
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and item.get("Gallery") == f"{GALLERY}/index.md":
            config.nav[i] = {"Gallery": pages}
    return config


def on_files(files: Files, config) -> Files:
    root = _root(config)
    generated = {"index.md": home_page((root / "README.md").read_text(encoding="utf-8")),
                 "api/index.md": entry_points_page(root / "puffgm" / "__init__.py")}
    examples = _examples(root)
    data_files = sorted(p for p in (root / "examples").iterdir() if p.is_file() and p.suffix != ".py")
    generated[f"{GALLERY}/index.md"] = gallery_index(examples)
    for path in examples:
        generated[f"{GALLERY}/{path.stem}.md"] = example_page(path, data_files)
    for uri, content in generated.items():
        if files.get_file_from_path(uri) is not None:
            raise ValueError(f"docs/{uri} exists, but the docs build generates it (docs_tools/hooks.py)")
        files.append(File.generated(config, uri, content=content))
    return files
