"""The results runner (python -m puffgm.experiments) in quick mode, and the experiments' metrics."""

import importlib
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("vega_datasets")  # in the `test` and `examples` extras
pytest.importorskip("matplotlib")

from puffgm.experiments import __main__ as runner  # noqa: E402
from puffgm.experiments.bai_topk import ranking_metrics  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _git_status():
    """``git status --porcelain`` of the checkout (None when the tests do not run from a git checkout)."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


@pytest.mark.slow
def test_quick_runner_writes_page_and_figures_outside_the_tree():
    before = _git_status()
    proc = subprocess.run([sys.executable, "-m", "puffgm.experiments", "--quick", "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = pathlib.Path(proc.stdout.strip().splitlines()[-1]).parent
    try:
        _check_quick_page(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    # the quick run wrote into a temporary folder, never into the repository (docs/ included)
    assert ROOT not in out.resolve().parents
    assert _git_status() == before


def _check_quick_page(out):
    tmp_path = out
    page = (tmp_path / "results.md").read_text()
    assert page.startswith("# Results")
    assert "python -m puffgm.experiments" in page and "Total time" in page and "Machine" in page
    for name in runner.EXPERIMENTS:
        mod = importlib.import_module(f"puffgm.experiments.{name}")
        assert f"## {mod.TITLE}" in page
    # every image link resolves to a written PNG
    links = [part.split(")")[0] for part in page.split("](results/")[1:]]
    assert links
    for link in links:
        png = tmp_path / "results" / link
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the paper's values are beside ours and the composition verdicts are right
    assert "(88.5%)" in page  # Table 2, Ours-Exp Acc@1 at eps 1
    assert page.count("| FAILS |") >= 4 and "contradicting Theorem 7" not in page


@pytest.mark.slow
def test_only_and_unknown_name(tmp_path):
    page = runner.run_all(tmp_path, quick=True, only="composition_conditions", show_progress=False)
    text = page.read_text()
    assert "necessary conditions" in text and "noisy top-K" not in text
    # on a page that already holds the section, --only replaces just that section
    page.write_text(text.replace("## Bai et al. Theorems 4-5", "## Other\n\nkept\n\n## Bai et al. Theorems 4-5")
                    + "\n## Later\n\nalso kept\n")
    runner.run_all(tmp_path, quick=True, only="composition_conditions", show_progress=False)
    new = page.read_text()
    assert "kept" in new and "also kept" in new and new.count("## Bai et al. Theorems 4-5") == 1
    assert "regenerated alone" in new and new.index("## Other") < new.index("## Bai") < new.index("## Later")
    with pytest.raises(SystemExit, match="Unknown experiment"):
        runner.run_all(tmp_path, quick=True, only="nope", show_progress=False)


def test_quick_runs_never_write_into_docs():
    out = runner.output_folder(None, quick=True)
    try:
        assert out.is_dir() and ROOT not in out.resolve().parents and not any(out.iterdir())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert runner.output_folder(None, quick=False) == runner.DEFAULT_OUT  # only a full run targets docs/
    for docs in (ROOT / "docs", runner.REPO_DOCS):
        with pytest.raises(SystemExit, match="does not write into .*published results page"):
            runner.main(["--quick", "--out", str(docs), "--no-progress"])
    before = _git_status()
    with pytest.raises(SystemExit, match="does not write into"):
        runner.run_all(runner.REPO_DOCS, quick=True, only="composition_conditions", show_progress=False)
    assert _git_status() == before


def test_progress_callback_reaches_total(tmp_path):
    from puffgm.experiments import composition_conditions

    seen = []
    composition_conditions.run(tmp_path, quick=True, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] and all(0 < d <= t for d, t in seen)


def test_ranking_metrics_by_hand():
    counts = np.array([10.0, 7.0, 7.0, 3.0, 0.0])
    # exact ranking (the 7-7 tie may go either way)
    for pred in ((0, 1, 2), (0, 2, 1)):
        m = ranking_metrics(counts, pred, 3)
        assert list(m["acc"]) == [1, 1, 1] and m["hr"] == 1 and m["ndcg"] == pytest.approx(1) and m["l1"] == 0
    m = ranking_metrics(counts, (1, 0, 3), 3)
    assert list(m["acc"]) == [0, 0, 0]
    assert m["hr"] == pytest.approx(2 / 3)
    assert m["l1"] == pytest.approx(3 + 3 + 4)
    disc = 1 / np.log2([2, 3, 4])
    assert m["ndcg"] == pytest.approx((7 * disc[0] + 10 * disc[1] + 3 * disc[2]) / (10 * disc[0] + 7 * disc[1] + 7 * disc[2]))


def test_bad_option_exits_2():
    proc = subprocess.run([sys.executable, "-m", "puffgm.experiments", "--only", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr and "Traceback" not in proc.stderr


def test_paper_tables_transcribed():
    """Golden values of Bai et al. Tables 2-5 and 7-8 (spot checks and shapes)."""
    from puffgm.experiments.bai_topk import EPSILONS, PAPER_ACC, PAPER_RANK

    assert PAPER_ACC["foursquare-3"][0][0] == [79.01, 63.10, 58.47]          # Table 2, eps 0.5, Ours-Exp
    assert PAPER_ACC["capture24-3"][5][1] == [77.8, 64.5, 46.2]              # Table 4, eps 5, MQM
    assert PAPER_ACC["foursquare-5"][2][3] == [8.90, 4.31, 3.25, 2.54, 2.12]  # Table 7, eps 2, GroupDP-Lap
    assert PAPER_RANK["foursquare-3"][0][3] == (5.4, 0.527, 88317)            # Table 3, eps 0.5, GroupDP-Lap
    assert PAPER_RANK["capture24-3"][4][0] == (87.93, 0.980, 18.6)            # Table 5, eps 4, Ours-Exp
    assert PAPER_RANK["foursquare-5"][5][1] == (82.8, 0.959, 706)             # Table 8, eps 5, MQM
    for key, rows in PAPER_ACC.items():
        k = 5 if key.endswith("5") else 3
        assert len(rows) == len(EPSILONS) and all(len(r) == 4 and all(len(c) == k for c in r) for r in rows)
        # the paper's Ours-Exp column rises with epsilon
        assert all(rows[i][0][0] < rows[i + 1][0][0] for i in range(len(rows) - 1))
    for rows in PAPER_RANK.values():
        assert len(rows) == len(EPSILONS) and all(len(r) == 4 for r in rows)
