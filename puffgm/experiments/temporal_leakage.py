"""Temporal privacy leakage (Cao et al.) beside the a(b)-influence curve and the MQM view, on the same chains.

A sequence of per-step releases, each epsilon_step-DP in the user's state X_t (for example
f(X_t) + Lap(1/epsilon_step) with f 1-Lipschitz), on a chain X_1..X_T with a stationary
start; secrets X_t = x versus X_t = x', Theta = the chain (or a finite class).  Three
analyses bound the Pufferfish parameter of the whole release (docs/leakage.md):

* **TPL** (Cao, Yoshikawa, Xiao and Xiong, ICDE 2017): max_t TPL_t of the recursions
  (:func:`puffgm.chains.leakage.temporal_leakage`), with the time reversal of the stationary
  chain as P^B; and its supremum as T grows;
* **a(b) curve** (Bai, He, Gu, Kifer and Maeng, Theorem 6): the release is per-entry
  epsilon_step-DP (each entry moves one output), so it is min_b (b epsilon_step + a(b))-Pufferfish
  (:func:`puffgm.translate` with ``epsilon_dp``);
* **MQM** (Song, Wang and Chaudhuri, Theorem 4.3): the release adds Lap(1/epsilon_step) to a
  1-Lipschitz query, which MQM certifies epsilon-Pufferfish for the smallest epsilon with
  sigma_max(epsilon) <= 1/epsilon_step (:func:`puffgm.calibrate`, bisection).

Conversely, for a target alpha: TPL's largest constant budget and the schedule with larger
ends (:func:`puffgm.chains.leakage.allocate_budget`), the curve's epsilon_DP (``translate`` with
``epsilon_puffer``) and MQM's 1/sigma_max(alpha).  Chains: the running examples of
docs/chains.md with their stationary start, the worst corner of the Figure 4 box, and chains
fitted (tau = 1e-5, Bai et al. D.2) to real series shipped by installed packages.
"""

from __future__ import annotations

import math
import pathlib
import time
from dataclasses import dataclass

import numpy as np

from puffgm.api import calibrate, influence_curve, translate
from puffgm.chains import ChainPriorClass
from puffgm.chains.data import discretise
from puffgm.chains.leakage import LeakageSupremum, allocate_budget, temporal_leakage
from puffgm.core.results import CalibrationResult

__all__ = ["TITLE", "run", "mqm_view", "Comparison"]

TITLE = "Temporal privacy leakage (Cao et al.) beside a(b)-influence curves and MQM"

T_STEPS = 100
EPS_STEPS = (0.1, 0.5, 1.0)
TARGETS = (1.0, 5.0)
#: b up to 49 keeps every curve on the stationary shortcut (T > 2 max_b + 1); the trivial point (0, T) is added.
MAX_B = 49


def _vega_series(name, column):
    from vega_datasets import local_data

    return getattr(local_data, name.replace("-", "_"))()[column].to_numpy(float)


def _chains(quick: bool, T: int) -> tuple:
    """[(label, source, ChainPriorClass)] with stationary starts, and notes on skipped data."""
    theta1, theta2 = [[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]
    out = [("theta1", "docs/chains.md running example", ChainPriorClass.from_matrices(theta1, "stationary", T)),
           ("theta2", "docs/chains.md running example", ChainPriorClass.from_matrices(theta2, "stationary", T))]
    if not quick:
        out += [("{theta1, theta2}", "finite class of both", ChainPriorClass.from_family([theta1, theta2],
                                                                                        "stationary", T)),
                ("p0 = p1 = 0.9", "worst corner of the Figure 4 box, alpha = 0.1",
                 ChainPriorClass.from_matrices([[0.9, 0.1], [0.1, 0.9]], "stationary", T))]
    import statsmodels.api as sm

    series, notes = [("El Nino SST", "statsmodels elnino, monthly 1950-2010",
                      sm.datasets.elnino.load_pandas().data.drop(columns="YEAR").to_numpy(float).ravel())], []
    if not quick:
        try:
            series.append(("Seattle temperature", "vega_datasets seattle-temps, hourly 2010",
                           _vega_series("seattle-temps", "temp")))
        except ImportError:
            notes.append("vega_datasets is not installed: the Seattle series is skipped")
    for name, source, x in series:
        for k in ((4,) if quick else (4, 51)):
            s = discretise(x, k).tolist()
            cc = ChainPriorClass.fit(s, length=T, states=list(range(k)), initial="stationary")
            out.append((f"{name}, {k} states", f"{source}, fitted (tau = 1e-5)", cc))
    return out, notes


def mqm_view(chain_class, *, epsilon_step: float, rtol: float = 1e-6) -> float:
    """The smallest epsilon whose MQMExact noise scale sigma_max(epsilon) is at most 1/epsilon_step.

    sigma_max is non-increasing in epsilon, at least 1/epsilon and at most T/epsilon (the trivial quilt),
    so the answer lies in [epsilon_step, T epsilon_step]: geometric bisection to ``rtol``.
    """
    scale = 1.0 / epsilon_step
    lo, hi = epsilon_step, chain_class.length * epsilon_step
    if _sigma_max(chain_class, lo) <= scale:
        return lo
    while hi > lo * (1 + rtol):
        mid = math.sqrt(lo * hi)
        if _sigma_max(chain_class, mid) <= scale:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Comparison:
    """One chain at one per-step budget: the Pufferfish parameter each analysis certifies."""

    label: str
    epsilon_step: float
    tpl_max: float
    tpl_sup: float
    curve: float
    curve_b: int
    mqm: float
    group: float


@dataclass(frozen=True)
class Allowed:
    """One chain at one target alpha: the per-step budget each analysis allows."""

    label: str
    alpha: float
    tpl_constant: float
    ends: tuple
    curve: float
    mqm: float
    group: float


def _sigma_max(chain_class, epsilon: float) -> float:
    """sigma_max of ``puffgm.calibrate`` (MQMExact) at ``epsilon``."""
    result = calibrate(chain_class, epsilon=epsilon)
    assert isinstance(result, CalibrationResult)  # no query: a CalibrationResult
    return result.sigma_max


def _compare(label, cc, curve, eps, rtol) -> Comparison:
    leak = temporal_leakage(cc, epsilon=eps)
    sup = leak.supremum
    assert isinstance(sup, LeakageSupremum)  # a constant budget has its supremum over T
    t = translate(curve, epsilon_dp=eps)
    return Comparison(label, eps, leak.max_tpl, sup.sup_tpl, t.epsilon_puffer, t.b,
                      mqm_view(cc, epsilon_step=eps, rtol=rtol), cc.length * eps)


def _allowed(label, cc, curve, alpha) -> Allowed:
    const = allocate_budget(cc, epsilon=alpha)
    try:
        e = allocate_budget(cc, epsilon=alpha, scheme="ends")
        ends = (e.epsilon_first, e.epsilon_step, e.epsilon_last)
    except ValueError:
        ends = (math.nan,) * 3
    return Allowed(label, alpha, const.epsilon_step, ends, translate(curve, epsilon=alpha).epsilon_dp,
                   1.0 / _sigma_max(cc, alpha), alpha / cc.length)


def _series_for_plot(chains, eps, alpha):
    """The leakage over t of the first chain and of the 4-state El Nino chain, and theta1's two allocations."""
    picks = ([(label, src, cc) for label, src, cc in chains if label == "theta1"]
             + [(label, src, cc) for label, src, cc in chains if label.startswith("El Nino") and "4" in label])
    curves = {}
    for label, _, cc in picks:
        leak = temporal_leakage(cc, epsilon=eps)
        curve = influence_curve(cc, MAX_B)
        curves[label] = (leak, translate(curve, epsilon_dp=eps).epsilon_puffer,
                         mqm_view(cc, epsilon_step=eps, rtol=1e-4))
    cc = picks[0][2]
    allocs = (allocate_budget(cc, epsilon=alpha), allocate_budget(cc, epsilon=alpha, scheme="ends"))
    return curves, allocs


def _plot(path, curves, allocs, eps, alpha):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves) + 1, figsize=(5.0 * (len(curves) + 1), 3.9))
    # strict=False: one more axis than curves (the last panel is drawn after the loop)
    for ax, (label, (leak, curve_eps, mqm_eps)) in zip(axes, curves.items(), strict=False):
        t = np.arange(1, leak.length + 1)
        ax.plot(t, leak.bpl, "--", color="tab:blue", label="BPL_t")
        ax.plot(t, leak.fpl, ":", color="tab:blue", label="FPL_t")
        ax.plot(t, leak.tpl, "-", color="tab:blue", linewidth=2, label="TPL_t (Cao et al.)")
        ax.axhline(leak.supremum.sup_tpl, color="tab:blue", alpha=0.4, linewidth=1, label="sup TPL (T -> inf)")
        ax.axhline(curve_eps, color="tab:green", linewidth=3.5, alpha=0.5, label="a(b) curve, Thm 6")
        ax.axhline(mqm_eps, color="tab:orange", linewidth=1.5, linestyle="--", label="MQM (Song et al.)")
        ax.axhline(eps, color="0.5", linewidth=1, linestyle=(0, (1, 3)), label="epsilon_step (no correlation)")
        ax.set_title(f"{label}: per-step epsilon = {eps:g}, T = {leak.length}", fontsize=9)
        ax.set_xlabel("t")
        ax.set_ylabel("Pufferfish parameter about X_t")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    ax = axes[-1]
    const, ends = allocs
    t = np.arange(1, const.leakage.length + 1)
    ax.axhline(alpha, color="0.3", linewidth=0.8, linestyle=":", label=f"target alpha = {alpha:g}")
    ax.plot(t, const.leakage.tpl, color="tab:purple", label=f"TPL, constant epsilon = {const.epsilon_step:.4g}")
    ax.plot(t, ends.leakage.tpl, color="tab:red", linestyle="--", linewidth=2,
            label=f"TPL, ends {ends.epsilon_first:.3g} / middle {ends.epsilon_step:.4g}")
    ax.set_title(f"theta1: budgets for max TPL <= {alpha:g} (T = {const.leakage.length})", fontsize=9)
    ax.set_xlabel("t")
    ax.set_ylabel("TPL_t")
    ax.set_ylim(0, 1.15 * alpha)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="lower center")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _f(x, digits=4):
    return "inf" if isinstance(x, float) and math.isinf(x) else ("N/A" if x != x else f"{x:.{digits}g}")


def _best(values: dict) -> str:
    m = min(values.values())
    return ", ".join(k for k, v in values.items() if v <= m * (1 + 1e-4))  # ties within the bisection tolerance


def run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str:
    """Compute the side-by-side tables, write ``temporal_leakage.png`` into ``out_dir``, return the Markdown section."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    T = 50 if quick else T_STEPS
    eps_steps, targets, rtol = ((0.5,), (1.0,), 1e-4) if quick else (EPS_STEPS, TARGETS, 1e-5)
    chains, notes = _chains(quick, T)
    total, done = len(chains) + 1, 0
    rows, allowed = [], []
    for label, _src, cc in chains:
        curve = influence_curve(cc, MAX_B)
        rows += [_compare(label, cc, curve, e, rtol) for e in eps_steps]
        allowed += [_allowed(label, cc, curve, a) for a in targets]
        done += 1
        if progress:
            progress(done, total)
    plot_eps, plot_alpha = 0.5, 1.0
    curves, allocs = _series_for_plot(chains, plot_eps, plot_alpha)
    _plot(out_dir / "temporal_leakage.png", curves, allocs, plot_eps, plot_alpha)
    if progress:
        progress(total, total)
    return _markdown(chains, rows, allowed, notes, (T, rtol, time.perf_counter() - t0, quick))


def _markdown(chains, rows, allowed, notes, info) -> str:
    T, rtol, elapsed, quick = info
    L = [f"## {TITLE}", "",
         "The question of Cao, Yoshikawa, Xiao and Xiong (ICDE 2017, arXiv:1610.07543; IEEE TKDE 2018): a user's "
         "state $X_t$ follows a Markov chain, an $\\epsilon_{\\mathrm{step}}$-DP statistic of $X_t$ is released "
         "at every step $t = 1, \\dots, T$, the attacker knows the chain; what Pufferfish parameter (secrets "
         "$X_t = x$ vs $x'$, $\\Theta$ = the chain with its stationary start) does the whole release reach, and which "
         "$\\epsilon_{\\mathrm{step}}$ keeps it below a target $\\alpha$?  Three analyses answer for the same "
         "release (the method and formulas: [docs/leakage.md](leakage.md)):", "",
         "* **TPL**: $\\max_t \\mathrm{TPL}_t$, "
         "$\\mathrm{TPL}_t = \\mathrm{BPL}_t + \\mathrm{FPL}_t - \\epsilon_t$ (Cao et al.'s recursions, `puffgm "
         "leakage`), with the time reversal of the stationary chain as backward matrix; *sup* is its limit as $T$ "
         "grows (fixed points).",
         "* **$a(b)$ curve**: the release is per-entry $\\epsilon_{\\mathrm{step}}$-DP (each $X_t$ moves one "
         "output), so Theorem 6 of Bai et al. makes it "
         "$\\min_b (b\\, \\epsilon_{\\mathrm{step}} + a(b))$-Pufferfish (`puffgm translate --epsilon-dp`; $b$ up "
         f"to {MAX_B} and the trivial point $(0, T)$).",
         "* **MQM**: the release is $f(X_t) + \\mathrm{Lap}(1/\\epsilon_{\\mathrm{step}})$ for a 1-Lipschitz "
         "$f$, which the Markov Quilt Mechanism (Song et al., Theorem 4.3, MQMExact) certifies $\\epsilon$-Pufferfish "
         "for the smallest $\\epsilon$ with $\\sigma_{\\max}(\\epsilon) \\le 1/\\epsilon_{\\mathrm{step}}$ "
         f"(bisection of `puffgm.calibrate`, relative {rtol:g}).", "",
         "Conversely, for a target $\\alpha$: TPL's largest constant budget (bisection to $10^{-6}$) and the "
         "schedule with larger budgets at the two ends (TPL flat at $\\alpha$), the curve's "
         "$\\epsilon_{\\mathrm{DP}}$ (`translate --epsilon`), and MQM's $1/\\sigma_{\\max}(\\alpha)$, the "
         "per-step Laplace budget MQM allows.  Group DP ($T\\, \\epsilon_{\\mathrm{step}}$; $\\alpha/T$) is the "
         "correlation-blind bound every analysis improves on.  All three bound the same quantity, so the smallest "
         "(largest budget) is the one to use.", "",
         "![leakage against t](results/temporal_leakage.png)", "",
         f"### Pufferfish parameter reached by per-step $\\epsilon_{{\\mathrm{{step}}}}$-DP releases ($T = {T}$)", "",
         "| chain | $k$ | $\\epsilon_{\\mathrm{step}}$ | TPL $\\max_t$ | TPL sup ($T \\to \\infty$) | $a(b)$ "
         "curve ($b$ used) | MQM | group DP | smallest |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    ks = {label: cc.k for label, _, cc in chains}
    wins = {"TPL": 0, "a(b) curve": 0, "MQM": 0}
    for r in rows:
        best = _best({"TPL": r.tpl_max, "a(b) curve": r.curve, "MQM": r.mqm})
        for name in best.split(", "):
            wins[name] += 1
        L.append(f"| {r.label} | {ks[r.label]} | {r.epsilon_step:g} | {_f(r.tpl_max)} | {_f(r.tpl_sup)} | "
                 f"{_f(r.curve)} ({r.curve_b}) | {_f(r.mqm)} | {_f(r.group)} | {best} |")
    L += ["", f"### Per-step budget allowed for a target $\\alpha$ ($T = {T}$)", "",
          "| chain | $\\alpha$ | TPL constant | TPL ends: first / middle / last | $a(b)$ curve "
          "$\\epsilon_{\\mathrm{DP}}$ | MQM $1/\\sigma_{\\max}$ | group DP | largest |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for a in allowed:
        budgets = {"TPL": a.tpl_constant, "a(b) curve": a.curve, "MQM": a.mqm}
        top = max(budgets.values())
        L.append(f"| {a.label} | {a.alpha:g} | {_f(a.tpl_constant)} | {' / '.join(_f(v) for v in a.ends)} | "
                 f"{_f(a.curve)} | {_f(a.mqm)} | {_f(a.group)} | "
                 f"{', '.join(k for k, v in budgets.items() if v >= top * (1 - 1e-9))} |")
    L += ["", f"Smallest parameter per row: TPL {wins['TPL']}, a(b) curve {wins['a(b) curve']}, MQM {wins['MQM']} "
          f"(of {len(rows)} rows).", "",
          "**When each is tighter.**  TPL uses the noise of the releases themselves: $L(a) < a$ as soon as every two "
          "rows of the (backward or forward) matrix overlap, so the leakage saturates ($L'(0)$ is the largest total "
          "variation distance between two rows).  On chains whose rows overlap substantially (the binary running "
          "examples and the box corner) it is the tightest by far, and it is close to exact there: randomized "
          "response at every step reaches $\\mathrm{TPL}_t$ at every $t$ on $\\theta_1$ and $\\theta_2$ (to "
          "$10^{-12}$ for $T = 6$ and $\\epsilon_{\\mathrm{step}}$ = 0.1, 0.5, 1: tests/chains/test_leakage.py "
          "enumerates every output).  The quilt analyses (curve and MQM) bound what the *exact* values of a quilt "
          "reveal (the max-influence $e(X_Q \\mid X_i)$) and pay "
          "$\\operatorname{card}(X_N)\\, \\epsilon_{\\mathrm{step}}$ for the nearby records: they ignore that "
          "the quilt's records are released with noise, but they only need the correlation between $X_i$ and records "
          "$b$ steps away to *decay*.  Chains with transition probabilities near zero (the fitted chains, whose "
          "unseen transitions have probability $\\tau = 10^{-5}$) make $L(a)$ close to $a$ until $e^a$ is about "
          "$1/\\tau$, so TPL grows like $t\\, \\epsilon_{\\mathrm{step}}$ up to about $\\log(1/\\tau)$ before it "
          "saturates; where correlations decay within a few steps (El Nino) the quilts stay far lower, so TPL is "
          "loose there (every per-entry DP release is within the curve's bound).  Where they also decay slowly "
          "(hourly temperatures) every analysis is close to group DP.  The schedule with larger ends is built for the "
          "supremum: its middle budget keeps sup TPL at $\\alpha$ as $T$ grows, which on the fitted chains (sup TPL "
          "far above $\\max_t \\mathrm{TPL}_t$ for $T = 100$) is much smaller than the constant budget for "
          "$T = 100$.  MQM is never above the curve (max over nodes of min over quilts versus min over $b$ of max "
          "over nodes, for the same quilts); the curve covers every per-entry DP mechanism, MQM the Laplace release "
          "of its theorem.  TPL is never above group DP ($L(a) \\le a$).  With two rows of disjoint support (for "
          "example a periodic chain) TPL grows by $\\epsilon_{\\mathrm{step}}$ at every step and its sup is "
          "infinite (docs/leakage.md gives the exact condition).",
          ""]
    L += [f"*Note:* {n}." for n in notes]
    mode = " (quick mode: fewer chains and budgets, T = 50)" if quick else ""
    L += [f"Run time of this section: {elapsed:.1f} s{mode}.", ""]
    return "\n".join(L)
