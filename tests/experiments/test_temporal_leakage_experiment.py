"""The temporal-leakage experiment (docs/results.md) and the runner's --only insertion and --quick output."""

import pathlib

import pytest

from puffgm.chains import ChainPriorClass
from puffgm.experiments import __main__ as runner


def test_mqm_view_inverts_the_calibration():
    import puffgm
    from puffgm.experiments.temporal_leakage import mqm_view

    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], "stationary", 20)
    for eps_step in (0.2, 1.0):
        e = mqm_view(cc, epsilon_step=eps_step, rtol=1e-6)
        assert eps_step <= e <= 20 * eps_step
        assert puffgm.calibrate(cc, epsilon=e).sigma_max <= 1 / eps_step
        assert puffgm.calibrate(cc, epsilon=e / (1 + 2e-6)).sigma_max > 1 / eps_step
    assert mqm_view(cc.with_length(1), epsilon_step=0.7) == 0.7  # one record: plain DP


def test_insert_section_keeps_the_order_of_experiments():
    page = "# Results\n\nheader\n\n## A\n\ntext a\n"
    new = runner._insert_section(page, runner.EXPERIMENTS[-1], "## New\n\nnew text\n")
    assert new.index("## A") < new.index("## New") and new.endswith("new text\n")
    from puffgm.experiments.temporal_leakage import TITLE

    assert runner.EXPERIMENTS.index("composition_conditions") < runner.EXPERIMENTS.index("temporal_leakage")
    page = f"# Results\n\n## Other\n\nx\n\n## {TITLE}\n\ny\n"
    new = runner._insert_section(page, "composition_conditions", "## Conditions\n\nz\n")
    assert new.index("## Other") < new.index("## Conditions") < new.index(f"## {TITLE}")
    assert runner._insert_section("no sections here", "temporal_leakage", "## X\n") is None


def test_quick_never_writes_the_published_page():
    quick = runner.output_folder(None, quick=True)
    assert quick.resolve() != runner.REPO_DOCS.resolve() and quick.exists()
    quick.rmdir()
    assert runner.output_folder(None, quick=False) == runner.DEFAULT_OUT


@pytest.mark.slow
def test_quick_run_writes_tables_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from puffgm.experiments import temporal_leakage

    text = temporal_leakage.run(tmp_path, quick=True)
    assert text.startswith(f"## {temporal_leakage.TITLE}")
    assert (tmp_path / "temporal_leakage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    row = next(ln.split("|")[1:-1] for ln in text.splitlines() if ln.startswith("| theta1 | 2 |"))
    tpl, curve, mqm = float(row[3]), float(row[5].split()[0]), float(row[6])
    assert tpl < mqm <= curve * (1 + 1e-3) and row[8].strip() == "TPL"  # TPL is the tightest on theta1


@pytest.mark.slow
def test_example_runs():
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "examples" / "temporal_leakage.py")], capture_output=True,
                          text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "max TPL" in proc.stdout and "infinite" in proc.stdout and "a(b) curve" in proc.stdout
