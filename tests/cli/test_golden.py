"""The CLI's JSON outputs stay equal to the recorded ones, up to floating-point rounding.

``tests/data/golden_cli.json`` is recorded by ``tests/cli/record_golden.py``; every command is
replayed and compared with :func:`differences`:

* structure exactly: the same keys, the same list lengths, the same types (an int stays an int);
* every float with relative tolerance ``RTOL = 1e-9`` and absolute floor ``ATOL = 1e-12``:
  ``|new - old| <= max(RTOL * |old|, ATOL)`` (infinities must match exactly);
* every string exactly once its numbers are masked (a number standing alone, not a digit in a
  name such as ``X3`` or in a hex fingerprint); a number written with a decimal point or an
  exponent (a formatted float) is compared with the float tolerance, an integer exactly.

Floats differ in the last bits between BLAS builds and summation orders; the tolerance absorbs
that and nothing more (a relative change of 1e-6 fails, :func:`test_a_real_change_fails`).
Witnesses (quilts, worst pairs) are strings and lists: they must match exactly, which holds
because the code breaks ties canonically (:mod:`puffgm.core.ties`).  Wall-clock keys are left
out when recording.
"""

from __future__ import annotations

import json
import math
import pathlib
import re

import numpy as np
import pytest
from record_golden import COMMANDS, GOLDEN, run_cli, write_files

RECORDED = json.loads(GOLDEN.read_text())
SLOW = {"calibrate hailfinder", "calibrate hepar2", "calibrate win95pts", "curve alarm", "curve gaussian",
        "calibrate gaussian", "translate gaussian", "audit asia-like"}

#: Relative tolerance of a float against its recorded value.
RTOL = 1e-9
#: Absolute floor of the tolerance, for values near 0.
ATOL = 1e-12

#: A number standing alone in a string (not part of a name such as X3 or of a hex fingerprint).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")


def _floats_close(new: float, old: float) -> bool:
    if not (math.isfinite(new) and math.isfinite(old)):
        return new == old
    return abs(new - old) <= max(RTOL * abs(old), ATOL)


def _strings_differ(new: str, old: str) -> str | None:
    if _NUMBER.sub("#", new) != _NUMBER.sub("#", old):
        return f"text {new!r} != {old!r}"
    for x, y in zip(_NUMBER.findall(new), _NUMBER.findall(old), strict=True):
        is_float = any(c in y for c in ".eE") or any(c in x for c in ".eE")
        if (is_float and not _floats_close(float(x), float(y))) or (not is_float and x != y):
            return f"number {x} != {y} in {old!r}"
    return None


def differences(new, old, path: str = "$") -> list[str]:
    """Where ``new`` differs from the recorded ``old`` beyond the stated tolerance (empty: equal)."""
    if isinstance(old, dict):
        if not isinstance(new, dict) or set(new) != set(old):
            return [f"{path}: keys {sorted(new) if isinstance(new, dict) else type(new).__name__} "
                    f"!= {sorted(old)}"]
        return [d for k in old for d in differences(new[k], old[k], f"{path}.{k}")]
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{path}: {len(new) if isinstance(new, list) else type(new).__name__} items != {len(old)}"]
        return [d for k, (x, y) in enumerate(zip(new, old, strict=True)) for d in differences(x, y, f"{path}[{k}]")]
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        return [] if _floats_close(float(new), old) else [f"{path}: {new!r} != {old!r}"]
    if isinstance(old, str) and isinstance(new, str):
        why = _strings_differ(new, old)
        return [] if why is None else [f"{path}: {why}"]
    return [] if type(new) is type(old) and new == old else [f"{path}: {new!r} != {old!r}"]


# ------------------------------------------------------------------ the replay


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> pathlib.Path:
    work = tmp_path_factory.mktemp("golden")
    write_files(work)
    return work


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in COMMANDS])
def test_cli_output_is_unchanged(name, workdir):
    assert RECORDED[name]["argv"] == COMMANDS[name]
    assert differences(run_cli(COMMANDS[name], workdir), RECORDED[name]["output"]) == []


# ------------------------------------------------------------------ the comparison itself


def _map_floats(obj, change):
    """``obj`` with every float, and every formatted float inside a string, replaced by ``change(x)``."""
    if isinstance(obj, dict):
        return {k: _map_floats(v, change) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_floats(v, change) for v in obj]
    if isinstance(obj, float):
        return change(obj)
    if isinstance(obj, str):
        return _NUMBER.sub(lambda m: repr(change(float(m.group()))) if any(c in m.group() for c in ".eE")
                           else m.group(), obj)
    return obj


def _ulps(x: float, n: int) -> float:
    for _ in range(abs(n)):
        x = float(np.nextafter(x, math.inf if n > 0 else -math.inf))
    return x


def _floats(obj) -> list[float]:
    if isinstance(obj, dict):
        return [f for v in obj.values() for f in _floats(v)]
    if isinstance(obj, list):
        return [f for v in obj for f in _floats(v)]
    return [obj] if isinstance(obj, float) else []


@pytest.mark.parametrize("n_ulps", [1, -1, 4, -4])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_few_ulps_pass(name, n_ulps):
    """Every recorded number moved by a few ulps (floats in strings too) still compares equal."""
    old = RECORDED[name]["output"]
    assert differences(_map_floats(old, lambda x: _ulps(x, n_ulps)), old) == []


@pytest.mark.parametrize("name", [n for n in COMMANDS if any(f != 0 and math.isfinite(f)
                                                              for f in _floats(RECORDED[n]["output"]))])
def test_a_real_change_fails(name):
    """One recorded float changed by 1e-6 relative (a sample of them, one at a time) fails."""
    old = RECORDED[name]["output"]
    values = [f for f in _floats(old) if f != 0 and math.isfinite(f)]
    for target in values[:: max(1, len(values) // 20)]:
        done = []

        def change(x, target=target, done=done):
            if x == target and not done:
                done.append(x)
                return x * (1 + 1e-6)
            return x

        assert differences(_map_floats(old, change), old) != [], target


def test_text_and_structure_are_exact():
    """A witness string, a key or a list length that changes fails; integers in text are exact."""
    old = {"witness": ["X3", "X8"], "text": "log 90.947368 (2 nodes)", "n": 3, "a": [1.5, 2.5]}
    assert differences(dict(old), old) == []
    assert differences({**old, "witness": ["X2", "X7"]}, old) != []
    assert differences({**old, "text": "log 90.947368 (3 nodes)"}, old) != []
    assert differences({**old, "text": "log 90.94737 (2 nodes)"}, old) != []
    assert differences({**old, "text": "log 90.94736800000001 (2 nodes)"}, old) == []
    assert differences({**old, "n": 3.0}, old) != []
    assert differences({**old, "a": [1.5]}, old) != []
    assert differences({k: v for k, v in old.items() if k != "n"}, old) != []
    assert differences({**old, "a": [1.5, math.inf]}, old) != []
