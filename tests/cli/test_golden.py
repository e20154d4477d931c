"""The CLI's JSON outputs stay bit-identical to the recorded ones (issue 25, item 9).

``tests/data/golden_cli.json`` was recorded by ``tests/cli/record_golden.py`` before the
package was reorganised; every float is compared exactly (JSON round trip of the
shortest repr), only wall-clock keys are left out.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from record_golden import COMMANDS, GOLDEN, run_cli, write_files

RECORDED = json.loads(GOLDEN.read_text())
SLOW = {"calibrate hailfinder", "calibrate hepar2", "calibrate win95pts", "curve alarm", "curve gaussian",
        "calibrate gaussian", "translate gaussian", "audit asia-like"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> pathlib.Path:
    work = tmp_path_factory.mktemp("golden")
    write_files(work)
    return work


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in COMMANDS])
def test_cli_output_is_unchanged(name, workdir):
    assert RECORDED[name]["argv"] == COMMANDS[name]
    assert run_cli(COMMANDS[name], workdir) == RECORDED[name]["output"]
