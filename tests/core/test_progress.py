"""Progress bars of long calibrations (puffgm.core.progress): one helper, on a terminal only, off with --quiet."""

from __future__ import annotations

import io
import pathlib
import re

import pytest

import puffgm
from puffgm.core import progress as progress_module
from puffgm.core.progress import progress_bar, stages

PACKAGE = pathlib.Path(puffgm.__file__).parent


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def no_delay(monkeypatch):
    """Bars appear at once (DELAY 0), so a quick calibration draws one."""
    monkeypatch.setattr(progress_module, "DELAY", 0.0)


def test_a_bar_only_on_a_terminal_and_never_when_disabled(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress_bar(None, 3, "x") is None  # not a terminal
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert progress_bar(False, 3, "x") is None
    bar = progress_bar(None, 3, "x")
    assert bar is not None
    bar.close()
    with stages(False, 2, "x") as s:  # no bar: every call is a no-op
        s.show("a")
        s.advance("b")


def test_query_and_workload_calibrations_draw_their_stages(monkeypatch, no_delay, asia):
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    puffgm.calibrate_query(asia, {"count": 0}, epsilon=1.0, method="optimal-laplace", baselines=False)
    assert "calibrate query" in err.getvalue()
    err.seek(0), err.truncate()
    puffgm.calibrate_workload(asia, {"histogram": {"nodes": ["asia", "smoke"]}}, epsilon=1.0, baselines=False)
    assert "calibrate 2 statistics" in err.getvalue()
    err.seek(0), err.truncate()
    puffgm.calibrate_query(asia, {"count": 0}, epsilon=1.0, baselines=False, progress=False)
    assert err.getvalue() == ""


def test_cli_quiet_turns_the_query_bar_off(monkeypatch, no_delay, cli):
    argv = ("calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}', "--method", "optimal-laplace")
    for extra, drawn in (((), True), (("--quiet",), False)):
        terminal = _Terminal()
        monkeypatch.setattr("sys.stderr", terminal)
        code, _, _ = cli(*argv, *extra)
        assert code == 0 and ("calibrate query" in terminal.getvalue()) is drawn


def test_every_bar_of_the_package_goes_through_the_one_helper():
    """No module but puffgm.core.progress (and the experiments' runner) builds a tqdm bar itself."""
    makers = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("core/progress.py", "experiments/__main__.py"):
            continue
        if re.search(r"\btqdm\(", path.read_text(encoding="utf-8")):
            makers.append(rel)
    assert makers == []
