"""Regenerate docs/results.md and its figures: ``python -m puffgm.experiments [--quick] [--out DIR] [--only NAME]``.

Only a full run regenerates the published page: without ``--out``, a full run writes
``docs/results.md`` (run from the repository root), while a ``--quick`` run writes into a new
temporary folder (its path is printed).  A quick run never writes into the repository's
``docs/`` folder, even when asked to with ``--out``: its smaller numbers are not the published ones.

Each module named in :data:`EXPERIMENTS` (under :mod:`puffgm.experiments`) defines

* ``TITLE: str`` and
* ``run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str``, which writes
  its PNGs into ``out_dir`` (``DIR/results``) and returns its Markdown section (a ``##``
  heading, tables with the paper's values beside ours, image links ``results/NAME.png``);
  ``progress`` is None or a callable ``progress(done, total)``.

The runner writes ``DIR/results.md``: a header (how to regenerate, machine, date, total
time) and the sections in the order of :data:`EXPERIMENTS`.  With ``--only NAME`` and an
existing page, only that section is replaced, or inserted at its place in the order of
:data:`EXPERIMENTS` when the page does not hold it yet (and a dated line is added to the
header); without a page, a page with that one section is written.  ``--quick`` without
``--out`` writes to a new temporary folder (:func:`output_folder`), and is refused in docs/, so a
smoke run never overwrites the published docs/results.md.  Adding an experiment is one line: append its
module name to :data:`EXPERIMENTS`.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import pathlib
import platform
import sys
import time

EXPERIMENTS = [
    "song_figure4",
    "song_tables",
    "bai_topk",
    "composition_conditions",
    "query_calibration",
    "temporal_leakage",
    "network_scale",
    "workloads",
]

DEFAULT_OUT = pathlib.Path("docs")  # full runs, from the repository root

#: The docs/ folder of the repository this package sits in (quick runs never write there).
REPO_DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def output_folder(out: pathlib.Path | None, *, quick: bool) -> pathlib.Path:
    """Where a run writes: ``out`` if given, else docs/ for a full run and a new temporary folder for a quick run.

    Parameters
    ----------
    out : pathlib.Path or None
        The ``--out`` folder, or None for the default.
    quick : bool
        Whether the run is the quick smoke run.

    Returns
    -------
    pathlib.Path
        The folder that receives ``results.md`` and ``results/*.png``.

    Raises
    ------
    SystemExit
        If a quick run is pointed at a docs/ folder holding the published page (the repository's
        docs/ or ./docs): its fewer trials and settings would overwrite the published numbers.
    """
    import tempfile

    if out is None:
        return pathlib.Path(tempfile.mkdtemp(prefix="puffgm-results-quick-")) if quick else DEFAULT_OUT
    out = pathlib.Path(out)
    if quick and out.resolve() in (REPO_DOCS.resolve(), DEFAULT_OUT.resolve()):
        raise SystemExit(f"A --quick run does not write into {out} (the published results page); "
                         "leave out --out for a temporary folder or give another folder.")
    return out


def _machine() -> str:
    import numpy
    import scipy

    cpus = os.cpu_count() or "?"
    return (f"{platform.system()} {platform.machine()}, {cpus} cores, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}, scipy {scipy.__version__}")


def _load(name: str):
    mod = importlib.import_module(f"puffgm.experiments.{name}")
    if not isinstance(getattr(mod, "TITLE", None), str) or not callable(getattr(mod, "run", None)):
        raise SystemExit(f"puffgm.experiments.{name} must define TITLE and run(out_dir, *, quick, progress).")
    return mod


def run_all(out: pathlib.Path | None, *, quick: bool = False, only: str | None = None,
            show_progress: bool | None = None) -> pathlib.Path:
    """Run the experiments and write ``out/results.md`` (+ ``out/results/*.png``); return the page's path.

    ``out`` None chooses as :func:`output_folder` does (docs/ for a full run, a temporary folder
    for a quick run); a quick run into docs/ is refused.  ``show_progress`` None (default) draws the
    progress bars only when stderr is a terminal.
    """
    from tqdm import tqdm

    from puffgm.core.validation import progress_enabled

    names = list(EXPERIMENTS)
    if only is not None:
        if only not in names:
            raise SystemExit(f"Unknown experiment {only!r}; choose from {', '.join(names)}.")
        names = [only]
    out = output_folder(out, quick=quick)
    fig_dir = out / "results"
    fig_dir.mkdir(parents=True, exist_ok=True)
    sections, times = [], []
    t_all = time.perf_counter()
    for name in names:
        mod = _load(name)
        bar = tqdm(total=1, desc=name, unit="step", disable=not progress_enabled(show_progress), leave=True,
                   file=sys.stderr)

        def progress(done, total, _bar=bar):
            if _bar.total != total:
                _bar.total = total
            _bar.n = done
            _bar.refresh()

        t0 = time.perf_counter()
        text = mod.run(fig_dir, quick=quick, progress=progress)
        times.append((name, time.perf_counter() - t0))
        bar.close()
        if not text.lstrip().startswith("## "):
            raise SystemExit(f"puffgm.experiments.{name}.run must return a Markdown section starting with '## '.")
        sections.append(text.rstrip() + "\n")
    total = time.perf_counter() - t_all
    cmd = "python -m puffgm.experiments" + (" --quick" if quick else "") + (f" --only {only}" if only else "")
    header = [
        "# Results: the papers' experiments, reproduced",
        "",
        "Generated by `" + cmd + "` (from the repository root, after `pip install \".[examples]\"`; "
        "nothing is downloaded).  "
        "Regenerate everything with `python -m puffgm.experiments` (add `--quick` for the seconds-long smoke "
        "version the test suite runs, which writes to a temporary folder, never to docs/; `--out DIR` to write "
        "elsewhere; `--only NAME` for one experiment).",
        "",
        f"* Date of run: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"* Machine: {_machine()} (shared with other jobs: times are indicative)",
        f"* Total time: {total:.1f} s"
        + (" (quick mode: fewer trials and settings; not the published page)" if quick else ""),
        "* Sections: " + ", ".join(f"`{n}` ({t:.1f} s)" for n, t in times),
        "",
    ]
    page = out / "results.md"
    if only is not None and page.exists():
        old = page.read_text(encoding="utf-8")
        replaced = _replace_section(old, _load(only).TITLE, sections[0])
        if replaced is None:
            replaced = _insert_section(old, only, sections[0])
        if replaced is not None:
            stamp = (f"* `{only}` regenerated alone with `{cmd}` on "
                     f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} ({total:.1f} s)")
            head, sep, rest = replaced.partition("\n## ")
            page.write_text(head.rstrip("\n") + "\n" + stamp + "\n\n" + sep.lstrip("\n") + rest, encoding="utf-8")
            return page
    page.write_text("\n".join(header) + "\n" + "\n".join(sections), encoding="utf-8")
    return page


def _replace_section(page: str, title: str, section: str):
    """``page`` with its ``## title`` section (up to the next ``## `` heading) replaced, or None if absent."""
    marker = f"## {title}\n"
    start = page.find(marker)
    if start < 0 or (start > 0 and page[start - 1] != "\n"):
        return None
    nxt = page.find("\n## ", start + len(marker))
    end = len(page) if nxt < 0 else nxt + 1
    return page[:start] + section.rstrip("\n") + "\n" + ("\n" if nxt >= 0 else "") + page[end:]


def _insert_section(page: str, name: str, section: str):
    """``page`` with ``section`` inserted before the first later experiment's section (or at the end).

    None when the page has no ``## `` section at all (not a results page).
    """
    if "\n## " not in page:
        return None
    later = EXPERIMENTS[EXPERIMENTS.index(name) + 1:]
    for other in later:
        start = page.find(f"\n## {_load(other).TITLE}\n")
        if start >= 0:
            return page[:start + 1] + section.rstrip("\n") + "\n\n" + page[start + 1:]
    return page.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puffgm.experiments",
                                     description="Regenerate docs/results.md and its figures (a full run only).")
    parser.add_argument("--quick", action="store_true",
                        help="seconds-long smoke run (fewer trials and settings); writes to a new temporary folder "
                             "(or --out), never to docs/")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="directory for results.md and results/*.png (default: ./docs for a full run, run from "
                             "the repository root; a new temporary folder for --quick)")
    parser.add_argument("--only", metavar="NAME", choices=EXPERIMENTS,
                        help="run one experiment: " + ", ".join(EXPERIMENTS))
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (default: bars only when stderr is a terminal)")
    args = parser.parse_args(argv)
    page = run_all(args.out, quick=args.quick, only=args.only, show_progress=False if args.no_progress else None)
    print(page)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
