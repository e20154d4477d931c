"""No tuple returned by one function is read by position in another (typed records between modules).

A function whose every ``return`` is a tuple display (``return a, b``) hands back a record
without names; its callers must unpack it (``a, b = f()``) or the function must return a
frozen dataclass or NamedTuple with named fields.  The check is precise: it fires only on
``f(...)[k]`` or ``x = f(...); x[k]`` (an integer constant or a slice with constant bounds)
when *every* function or method of puffgm named ``f`` returns only tuple displays (or None),
so arrays, lists and sequences returned by a call are never flagged.  Functions that build a
tuple in a variable or return a NamedTuple are not seen, which can miss a record but never
raises a false alarm.

``ALLOWED`` names the (module, function) pairs allowed to read such tuples by position: none
today; an entry needs a reason, and a second test fails once it no longer applies.
"""

from __future__ import annotations

import ast
import collections
import functools
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "puffgm"

#: (path under puffgm/, innermost function) pairs allowed to read a returned tuple by position.
ALLOWED: set[tuple[str, str]] = set()

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _own_nodes(fn):
    """The nodes of ``fn``'s body, not descending into nested functions, lambdas or classes."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _tuple_returning(trees) -> set:
    """Names whose every definition in ``trees`` returns only tuple displays (at least one) or None."""
    kinds = collections.defaultdict(set)
    for tree in trees:
        for fn in ast.walk(tree):
            if isinstance(fn, _FUNCTIONS):
                values = [n.value for n in _own_nodes(fn) if isinstance(n, ast.Return)]
                tuples = [v for v in values if isinstance(v, ast.Tuple)]
                none = [v for v in values if v is None or (isinstance(v, ast.Constant) and v.value is None)]
                kinds[fn.name].add("tuple" if tuples and len(tuples) + len(none) == len(values) else "other")
    return {name for name, k in kinds.items() if k == {"tuple"}}


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _constant_index(s) -> bool:
    if isinstance(s, ast.Constant):
        return isinstance(s.value, int) and not isinstance(s.value, bool)
    if isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub):
        return _constant_index(s.operand)
    if isinstance(s, ast.Slice):
        ends = [e for e in (s.lower, s.upper) if e is not None]
        return bool(ends) and all(_constant_index(e) for e in ends) and s.step is None
    return False


def positional_reads(trees: dict) -> list:
    """``(path, function, line, text)`` of every constant-index read of a tuple-returning call."""
    records = _tuple_returning(trees.values())
    found = []
    for path, tree in trees.items():
        for fn in ast.walk(tree):
            if not isinstance(fn, _FUNCTIONS):
                continue
            nodes = list(_own_nodes(fn))
            bound = {t.id for n in nodes if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                     and _callee(n.value) in records for t in n.targets if isinstance(t, ast.Name)}
            for n in nodes:
                if not (isinstance(n, ast.Subscript) and _constant_index(n.slice)):
                    continue
                v = n.value
                if (isinstance(v, ast.Call) and _callee(v) in records) or (isinstance(v, ast.Name) and v.id in bound):
                    found.append((path, fn.name, n.lineno, ast.unparse(n)))
    return sorted(found, key=lambda f: (f[0], f[2], f[3]))


@functools.cache
def _package_reads() -> tuple:
    trees = {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}
    return tuple(positional_reads(trees))


def test_no_returned_tuple_is_read_by_position():
    bad = [f"puffgm/{p}:{line} in {fn}: {text}" for p, fn, line, text in _package_reads() if (p, fn) not in ALLOWED]
    assert not bad, ("A tuple returned by a function is read by position; unpack it at the call site or return "
                     "a frozen dataclass or NamedTuple:\n" + "\n".join(bad))


def test_allow_list_is_not_stale():
    still = {(p, fn) for p, fn, _, _ in _package_reads()}
    assert not (ALLOWED - still), f"Remove from ALLOWED (no longer reads a tuple by position): {ALLOWED - still}"


def test_the_check_sees_records_and_spares_arrays():
    code = '''
import numpy as np

def pair(x):
    if x is None:
        return None
    return x, 2 * x

def grid(n):
    return np.zeros(n)

def reads(x):
    first = pair(x)[0]
    p = pair(x)
    return first + p[1] + grid(3)[0]

def unpacks(x):
    a, b = pair(x)
    return a + b
'''
    found = positional_reads({"m.py": ast.parse(code)})
    assert [(fn, text) for _, fn, _, text in found] == [("reads", "pair(x)[0]"), ("reads", "p[1]")]
