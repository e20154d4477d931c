"""Progress bars of long calibrations: one tqdm bar on stderr, only on a terminal, only after 2 seconds.

Every calibration that can take more than a few seconds (the network searches of
:func:`puffgm.networks.calibration.calibrate`, query-specific calibrations, workloads) draws its
bar through :func:`progress_bar`, so they all behave alike: nothing is drawn when stderr is not
a terminal (a pipe, a file, a test) unless the caller passes ``progress=True``, nothing when
``progress=False`` (``--quiet`` on the command line), and a bar appears only once the work has
run for :data:`DELAY` seconds (tqdm's ``delay``), so quick calls print nothing.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any

from puffgm.core.validation import progress_enabled

__all__ = ["DELAY", "progress_bar", "stages", "Stages"]

#: Seconds before a bar appears.
DELAY = 2.0


def progress_bar(progress: bool | None, total: int, desc: str, unit: str = "step") -> Any:
    """A tqdm bar on stderr that appears after :data:`DELAY` seconds, or None when no bar is wanted.

    Parameters
    ----------
    progress : bool or None
        True or False to force the bar on or off; None (default): only if stderr is a terminal
        (:func:`puffgm.core.validation.progress_enabled`).
    total : int
        Steps of the whole work.
    desc : str
        The bar's label.
    unit : str
        The name of one step.

    Returns
    -------
    tqdm.tqdm or None
        The bar (close it when done), or None when no bar is drawn.
    """
    if not progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, delay=DELAY, file=sys.stderr, leave=False)


class Stages:
    """The steps of a calibration on one bar (a no-op without a bar): ``advance(label)`` after each step."""

    def __init__(self, bar: Any):
        self.bar = bar

    def advance(self, label: str | None = None, steps: int = 1) -> None:
        """Count ``steps`` steps done and show ``label`` (the step now running) beside the bar."""
        if self.bar is None:
            return
        if label is not None:
            self.bar.set_postfix_str(label, refresh=False)
        self.bar.update(steps)

    def show(self, label: str) -> None:
        """Show ``label`` (the step now running) without counting a step."""
        if self.bar is not None:
            self.bar.set_postfix_str(label)


@contextmanager
def stages(progress: bool | None, total: int, desc: str, unit: str = "step"):
    """A :class:`Stages` over a :func:`progress_bar`, closed when the block ends (even on an error)."""
    bar = progress_bar(progress, total, desc, unit)
    try:
        yield Stages(bar)
    finally:
        if bar is not None:
            bar.close()
