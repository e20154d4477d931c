"""Query-specific calibration on the bundled networks: group DP, MQM, Wasserstein, optimal Laplace, optimal noise.

For the count of each node's first state (``{"count": 0}``) at epsilon 1, one
:func:`puffgm.calibrate_query` call with method ``"optimal-noise"`` computes the
exact conditional laws of the count given every secret (junction tree with a
partial-sum axis), then W (Song, Wang and Chaudhuri, SIGMOD 2017, Algorithm 1),
the optimal Laplace scale, the optimal noise law (linear program, exact audit)
and the MQM scale for comparison.  Every noise is compared by its expected
absolute error (the scale, for Laplace noise).  The figure shows one optimal
noise law beside the Laplace density at the optimal scale.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

__all__ = ["TITLE", "run", "plot_noise_law", "NETWORKS"]

TITLE = "Query-specific calibration: a count query on the bundled networks"

NETWORKS = ("asia", "child", "alarm", "insurance", "hailfinder", "win95pts", "hepar2", "pathfinder")

#: Larger bundled networks, tried to show where the exact laws stop (they are refused at once, before any work).
LARGER = ("andes", "pigs", "munin")

#: Seconds the optimal noise program may take per network before the row falls back to optimal Laplace.
NOISE_TIME_LIMIT = 180.0


def _row(name: str, epsilon: float) -> dict:
    import puffgm
    from puffgm.exceptions import PuffgmError, first_line

    t0 = time.perf_counter()
    try:
        cal = puffgm.calibrate_query(f"example:{name}", {"count": 0}, epsilon=epsilon, method="optimal-noise",
                                     time_limit=NOISE_TIME_LIMIT)
        note = ""
    except PuffgmError as exc:
        cal = puffgm.calibrate_query(f"example:{name}", {"count": 0}, epsilon=epsilon, method="optimal-laplace")
        note = f"optimal noise not computed: {first_line(exc)}"
    return {"name": name, "cal": cal, "note": note, "seconds": time.perf_counter() - t0}


def _refusals(epsilon: float) -> list:
    """One line per larger network: the refusal of the exact laws at the default limits."""
    import puffgm
    from puffgm.exceptions import PuffgmError, first_line

    out = []
    for name in LARGER:
        try:
            puffgm.calibrate_query(f"example:{name}", {"count": 0}, epsilon=epsilon, baselines=False, time_limit=60)
            out.append(f"* {name}: calibrated (not refused)")
        except PuffgmError as exc:
            out.append(f"* {name}: {first_line(exc)}")
    return out


def _fmt(x, digits: int = 4) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _tables(rows: list) -> list:
    L = ["| network | scored nodes | group DP | MQM ($\\sigma_{\\max} L$) | Wasserstein $W / \\epsilon$ | "
         "optimal Laplace | optimal noise | best gain over group DP | best gain over MQM |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        c = r["cal"]
        noise = None if c.optimal_noise is None else c.optimal_noise.expected_abs_error
        best = noise if noise is not None else c.optimal_laplace_scale
        mqm = c.mqm_scale
        L.append(f"| {r['name']} | {c.query['scored_nodes']} | {_fmt(c.group_dp_scale)} | {_fmt(mqm)} | "
                 f"{_fmt(c.wasserstein_scale)} | {_fmt(c.optimal_laplace_scale)} | {_fmt(noise)} | "
                 f"x{c.group_dp_scale / best:.3g} | {'n/a' if mqm is None else f'x{mqm / best:.3g}'} |")
    L += ["", "Exact audits (the loss of each released noise, computed from the conditional laws) and times "
          "(seconds, wall clock):", "",
          "| network | loss at $W / \\epsilon$ | loss at optimal Laplace | loss of optimal noise | laws | $W$ | "
          "optimal Laplace | optimal noise | whole call (with MQM) |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        c, s = r["cal"], r["cal"].seconds
        nl = None if c.optimal_noise is None else c.optimal_noise.loss
        L.append(f"| {r['name']} | {_fmt(c.wasserstein_loss, 7)} | {_fmt(c.optimal_laplace_loss, 7)} | {_fmt(nl, 7)} | "
                 f"{s.get('laws', 0):.2f} | "
                 f"{s.get('wasserstein', 0):.2f} | {s.get('optimal_laplace', 0):.2f} | "
                 f"{_fmt(s.get('optimal_noise'), 3)} | {r['seconds']:.1f} |")
    notes = [f"* {r['name']}: {r['note']}" for r in rows if r["note"]]
    return L + ([""] + notes if notes else [])


def plot_noise_law(result, title: str, path) -> None:
    """One optimal noise law (stems, linear and log scale) beside the Laplace density at the optimal scale.

    Parameters
    ----------
    result : OptimalNoise
        From :func:`puffgm.mechanisms.optimal_noise.optimal_noise_of`.
    title : str
        The figure's title (network, query, epsilon).
    path : path-like
        Where the PNG goes (needs matplotlib, the ``plot`` extra).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b, unit = result.laplace_scale, result.unit
    law = result.law.normalised()
    span = int(min(result.half_width, np.ceil(5 * b * unit)))
    k = np.arange(-span, span + 1)
    p = np.exp(law.log_mass(k))
    x = np.linspace(-span, span, 801) / unit
    dens = np.exp(-np.abs(x) / b) / (2 * b)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, log in zip(axes, (False, True), strict=True):
        ax.vlines(k / unit, 0 if not log else 1e-8, p, color="C0", lw=2)
        ax.plot(k / unit, p, "o", color="C0", ms=3, label=f"optimal noise: E|Z| = {result.expected_abs_error:.3g}")
        ax.plot(x, dens, color="C1", label=f"Laplace density, optimal scale b = {b:.3g}")
        ax.set_xlabel("noise (query units)")
        if log:
            ax.set_yscale("log")
            ax.set_ylim(max(1e-8, float(p[p > 0].min()) / 2), 1.0)
        else:
            ax.set_ylabel("probability / density")
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"{title}: audited loss {result.loss:.7g}; K = {result.half_width}, r = {result.tail_ratio:.4f}")
    fig.tight_layout()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str:
    """Calibrate the count query on each network, plot one noise law, return the Markdown section."""
    epsilon = 1.0
    names = NETWORKS[:2] if quick else NETWORKS
    rows = []
    for i, name in enumerate(names):
        rows.append(_row(name, epsilon))
        if progress is not None:
            progress(i + 1, len(names))
    plotted = next((r for r in rows if r["name"] == "child" and r["cal"].optimal_noise is not None), None)
    if plotted is not None:
        plot_noise_law(plotted["cal"].optimal_noise, f"child, count of first states, epsilon {epsilon:g}",
                       pathlib.Path(out_dir) / "optimal_noise.png")
    L = [f"## {TITLE}", "",
         "The count of each node's first state (`{\"count\": 0}`), every node protected, $\\epsilon = 1$, one prior "
         "per network.  Each column is the expected absolute error of the released noise (for Laplace noise, its "
         "scale): group DP (the count's range over the connected component), the Markov Quilt Mechanism "
         "($\\sigma_{\\max}$ times the Lipschitz constant 1), the Wasserstein mechanism (Song, Wang and Chaudhuri, "
         "Algorithm 1: $W / \\epsilon$), the least Laplace scale whose exact loss is at most $\\epsilon$, and the "
         "least-error noise law of the linear program of docs/optimal_noise.md.  Command: `puffgm calibrate "
         "example:NAME --epsilon 1 --query '{\"count\": 0}' --method optimal-noise` (docs/queries.md).", ""]
    L += _tables(rows)
    if not quick:
        L += ["", "The largest bundled network these methods handle is pathfinder (109 nodes; the largest clique of "
              "its junction tree has 32256 joint states, times a partial-sum axis of 110).  The larger networks are "
              "refused at the default limits, with the one-line message of `puffgm calibrate` (log-space "
              "convolutions cost the product of the two partial-sum lengths per entry, and an FFT would lose the "
              "tails that decide the loss; docs/queries.md, \"Limits\"):", ""] + _refusals(epsilon)
    if plotted is not None:
        L += ["", "![optimal noise law on child](results/optimal_noise.png)", "",
              "The optimal noise law on child (blue stems) beside the Laplace density at the optimal scale "
              "(orange): the program puts most mass on 0 and a few spikes at the offsets that the secrets' "
              "conditional laws allow, with geometric tails."]
    return "\n".join(L) + "\n"
