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
  follows is already a Markdown code block).

Only the copy griffe holds in memory is changed, never the source files.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>mod|func|class|meth|attr|data|exc|obj|const):`(?P<body>[^`]+)`")
LITERAL = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
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


def rewrite(text: str, scope: griffe.Object) -> str:
    """``text`` with its Sphinx roles turned into cross-references or inline code."""

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
        return f"[`{title}`][{found.path}]"

    return LITERAL.sub(":", ROLE.sub(one, text))


class SphinxRoles(griffe.Extension):
    """Rewrite the docstrings of a package once it is fully loaded."""

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
            stack.extend(member for member in obj.members.values() if isinstance(member, griffe.Object))
