"""A griffe extension for the docs site: Sphinx roles in puffgm's docstrings become links.

puffgm's docstrings are numpydoc, and they name other objects with Sphinx roles
(``:func:`calibrate```, ``:class:`~puffgm.core.results.CalibrationResult```).
mkdocstrings renders Markdown, where these would show as raw text.  Once the whole
package is loaded, every docstring is rewritten:

* a role whose target resolves to an object of puffgm that the API reference shows
  becomes a cross-reference ``[`name`][full.path]`` (checked by the strict build);
* any other role (another library, a private or command-line module) becomes inline
  code;
* a reST literal-block marker ``text::`` becomes ``text:`` (the indented block that
  follows is already a Markdown code block);
* a ``:math:`...``` role becomes ``$...$``, which pymdownx.arithmatex marks up and the
  build typesets (docs_tools/hooks.py);
* doctest lines (``>>>`` and their output) outside a numpydoc Examples section become a
  fenced Python code block, so that Markdown does not read them as nested blockquotes;
* a role inside a numpydoc type (``prior : :class:`PriorKind```) becomes the plain
  name, since mkdocstrings shows types as code, where a link would stay raw text;
* a package's re-export of an object defined in one of its modules is hidden, so each
  object is documented once (links to the re-exported name still reach it).

Only the copy griffe holds in memory is changed, never the source files.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>mod|func|class|meth|attr|data|exc|obj|const):`(?P<body>[^`]+)`")
LITERAL = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
MATH_ROLE = re.compile(r":math:`(?P<tex>[^`]+)`")
#: Modules the API reference does not show (the command line and the papers' experiments).
NOT_SHOWN = ("puffgm.cli", "puffgm.experiments", "puffgm.__main__")


def _shown(obj: griffe.Object | griffe.Alias) -> bool:
    path = obj.path
    if not path.startswith("puffgm.") or path.startswith(NOT_SHOWN):
        return False
    if any(part.startswith("_") and part != "__init__" for part in path.split(".")):
        return False
    node = obj
    while node.parent is not None:  # every enclosing object is public too
        if not node.is_public:
            return False
        node = node.parent
    return True


def _lookup(collection: griffe.ModulesCollection, path: str) -> griffe.Object | griffe.Alias | None:
    try:
        return collection[path]
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _target(scope: griffe.Object, name: str) -> griffe.Object | griffe.Alias | None:
    """The object ``name`` refers to from the docstring of ``scope``, if puffgm holds it."""
    name = name.lstrip(".")
    collection = scope.modules_collection
    found = _lookup(collection, name) if name.startswith("puffgm") else None
    if found is not None:
        return found
    first, _, rest = name.partition(".")
    node: griffe.Object | None = scope
    while node is not None:  # the enclosing scopes, innermost first
        try:
            base = node.resolve(first)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            node = node.parent
            continue
        return _lookup(collection, f"{base}.{rest}" if rest else base)
    return None


#: A numpydoc section header (its underline follows on the next line).
SECTION = re.compile(r"^\s*(?P<name>[A-Z][A-Za-z ]+)\s*$")
#: Sections whose unindented lines are ``name : type`` or a bare type.
TYPED_SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Receives", "Raises",
                  "Warns")


def _type_spans(lines: list[str]) -> list[int]:
    """For each line, the column where its numpydoc type begins, or -1 when the line holds no type.

    mkdocstrings shows a parameter's type as code, where a Markdown link would stay raw text,
    so a role there is written as the plain name.
    """
    out, section, base = [], None, None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        head = SECTION.match(line)
        if head and re.fullmatch(r"\s*-{3,}\s*", nxt):
            section, base = head["name"].strip(), len(line) - len(line.lstrip())
            out.append(-1)
            continue
        indent = len(line) - len(line.lstrip())
        if section in TYPED_SECTIONS and line.strip() and indent == base and not set(line.strip()) <= {"-"}:
            named = re.match(r"^\s*[\w*, ]+ : ", line)
            if named:
                out.append(named.end())
            elif section in ("Returns", "Yields", "Receives", "Raises", "Warns"):
                out.append(indent)
            else:
                out.append(-1)
        else:
            out.append(-1)
    return out


def fence_doctests(text: str) -> str:
    """Doctest runs outside a numpydoc Examples section as fenced Python blocks.

    A run is a ``>>>`` line and the non-blank lines that follow it at its indentation (``...``
    continuations and expected output).  griffe renders an Examples section's doctests as code
    already; anywhere else Markdown would read ``>>>`` as three nested blockquotes.
    """
    lines, out, section, i, fenced, literal = text.split("\n"), [], None, 0, False, False
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        head = SECTION.match(line)
        if head and re.fullmatch(r"\s*-{3,}\s*", nxt):
            section = head["name"].strip()
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if line.strip():  # inside a reST literal block (after "text::") the lines are code already
            literal = literal and line.startswith((" ", "\t")) or line.rstrip().endswith("::")
        if line.lstrip().startswith(">>>") and section != "Examples" and not fenced and not literal:
            indent = line[: len(line) - len(line.lstrip())]
            run = [line]
            while i + 1 < len(lines) and lines[i + 1].strip() and lines[i + 1].startswith(indent) \
                    and len(lines[i + 1]) - len(lines[i + 1].lstrip()) == len(indent):
                i += 1
                run.append(lines[i])
            out += [f"{indent}```python", *run, f"{indent}```"]
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


def rewrite(text: str, scope: griffe.Object) -> str:
    """``text`` with its Sphinx roles turned into cross-references or inline code (plain names in types)."""
    text = fence_doctests(text)
    lines = text.split("\n")
    spans = _type_spans(lines)
    for i, start in enumerate(spans):
        if start >= 0 and ROLE.search(lines[i], start):
            lines[i] = lines[i][:start] + ROLE.sub(_plain, lines[i][start:])
    return _rewrite_roles("\n".join(lines), scope)


def _plain(match: re.Match[str]) -> str:
    """A role inside a type: its short name, no markup."""
    body = match["body"].strip()
    explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
    if explicit:
        return explicit["title"]
    target = body.removesuffix("()")
    return target.lstrip("~").rsplit(".", 1)[-1] if target.startswith("~") else target


def _rewrite_roles(text: str, scope: griffe.Object) -> str:
    def one(match: re.Match[str]) -> str:
        body = match["body"].strip()
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        target = explicit["target"] if explicit else body
        short = target.startswith("~")
        target = target.lstrip("~").removesuffix("()")
        if explicit:
            title = explicit["title"]
        else:
            title = target.rsplit(".", 1)[-1] if short else target
            if match["role"] in ("func", "meth"):
                title += "()"
        found = _target(scope, target)
        if found is None or not _shown(found):
            return f"`{title}`"
        return f"[`{title}`][{_canonical(found)}]"

    return LITERAL.sub(":", ROLE.sub(one, MATH_ROLE.sub(r"$\g<tex>$", text)))


def _canonical(obj: griffe.Object | griffe.Alias) -> str:
    """Where the API reference documents ``obj``: the path of the object an alias points to."""
    try:
        return obj.canonical_path
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return obj.path


def _hide_reexports(module: griffe.Module) -> None:
    """Document each object once: a package's re-export of an object its own modules define is hidden.

    ``puffgm.api.calibrate`` is ``puffgm.api.dispatch.calibrate``; the page shows the latter,
    and a link to either name reaches it (mkdocstrings registers the aliases of what it renders).
    """
    for member in module.members.values():
        if not member.is_alias or member.inherited:
            continue
        target = _canonical(member)
        if target != member.path and target.startswith(module.path + ".") and not target.startswith(NOT_SHOWN):
            member.public = False


class SphinxRoles(griffe.Extension):
    """Rewrite the docstrings of a package once it is fully loaded, and hide re-exports."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        stack: list[griffe.Object] = [pkg]
        seen: set[int] = set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj)
            if obj.is_module:
                _hide_reexports(obj)
            stack.extend(member for member in obj.members.values() if isinstance(member, griffe.Object))
