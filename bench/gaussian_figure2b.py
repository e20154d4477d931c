"""Figure 2b of Bai et al. (Example 6.2, Theorem 9) against the certified Gaussian curve.

n = 20 coordinates (the paper does not give n), kernel Sigma_jk = exp(-(j-k)^2 / l), box [-5, 5]^n,
regions of width delta = 0.1; l in {0.5, 1, 2, 3, 5}.  Prints one JSON object with, for every l,
Theorem 9's values (center coordinate, farthest low-influence set, grid of 201 regions), the certified
values (same splits, center coordinate; and the max over every coordinate), the seconds per curve,
certified brackets of the exact b = 3 leakage, and a certified bracket of the exact b = 2 leakage (with an independent
adaptive-quadrature value at
the box corner maximising the natural parameter eta_i).  With --plot FILE it draws the figure; with
--b3-estimate it only prints uncertified b = 3 estimates (from below; see b3_estimate).  --cell-budget N
adds the b >= 4 cell engine (puffgm.gaussian.multivariate) with N cells per split; --ls picks length
scales (runs can be split and joined again with --merge); --lower-json draws the certified lower bounds
of --corner-lower.

    python bench/gaussian_figure2b.py --plot docs/gaussian/figure2b.png
    python bench/gaussian_figure2b.py --cell-budget 400 --ls 2 > l2.json   # (and 0.5,1 / 3 / 5)
    python bench/gaussian_figure2b.py --merge l*.json --lower-json docs/gaussian/figure2b_lower.json \
        --plot docs/gaussian/figure2b.png
"""

import argparse
import json
import math
import time

import numpy as np
from scipy import integrate, stats

from puffgm.gaussian.closed_forms import CurveOptions, gp_covariance, gp_region_curve
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions
from puffgm.gaussian.primitives import log_interval_prob

N, GAMMA, DELTA = 20, 5.0, 0.1
LS = (0.5, 1.0, 2.0, 3.0, 5.0)


def b2_bracket(ell):
    """Certified bracket of the exact b = 2 leakage (center coordinate, H = {i*, i* - 1}): the bivariate
    engine's upper bound and its certified lower bound at attained box corners, plus an independent
    adaptive-quadrature value at the corner maximising the natural parameter eta_i = (S^-1 mu)_i."""
    cov = gp_covariance(N, ell)
    i, k = N // 2 - 1, N // 2 - 2
    H = [i, k]
    C = [j for j in range(N) if j not in H]
    res = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA).leakage(i, C)
    W = np.linalg.solve(cov[np.ix_(C, C)], cov[np.ix_(C, H)]).T
    S = cov[np.ix_(H, H)] - W @ cov[np.ix_(C, H)]
    E = np.linalg.solve(S, W)
    si = math.sqrt(S[0, 0])
    c = S[1, 0] / S[0, 0]
    tau = math.sqrt(S[1, 1] - S[1, 0] ** 2 / S[0, 0])
    marg = float(log_interval_prob(GAMMA - DELTA, GAMMA, 0, 1) - log_interval_prob(-GAMMA, -GAMMA + DELTA, 0, 1))
    quad = -math.inf
    for xc in (GAMMA * np.sign(E[0]), -GAMMA * np.sign(E[0])):
        mu = W @ xc

        def logF(r, mu=mu):  # mu bound now (logF is used within this iteration only)
            def lf(x):
                return float(stats.norm.logpdf(x, mu[0], si)
                             + log_interval_prob(-GAMMA, GAMMA, mu[1] + c * (x - mu[0]), tau))

            grid = np.linspace(r, r + DELTA, 2001)
            M = max(lf(x) for x in grid)
            val = integrate.quad(lambda x: math.exp(lf(x) - M), r, r + DELTA, epsabs=0, epsrel=1e-12, limit=400)[0]
            return M + math.log(val)

        d = logF(GAMMA - DELTA) - logF(-GAMMA)
        quad = max(quad, d - marg, -d + marg)
    return {"upper": res.value, "lower": res.details["bivariate_lower"], "quadrature_at_eta_corner": quad,
            "theorem9": res.theorem9}


def b3_bracket(ell):
    """Certified bracket of the exact b = 3 leakage (center coordinate, H = {i*, i* - 1, i* + 1}): the
    certified upper bound (trivariate engine, or the bivariate + Bonferroni hybrid, whichever is
    smaller) and the trivariate engine's certified lower bound at attained box points."""
    cov = gp_covariance(N, ell)
    i = N // 2 - 1
    H = [i, i - 1, i + 1]
    C = [j for j in range(N) if j not in H]
    t0 = time.perf_counter()
    res = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA).leakage(i, C)
    return {"upper": res.value, "lower": res.details["bivariate_lower"], "trivariate": res.details["trivariate"],
            "theorem9": res.theorem9, "seconds": time.perf_counter() - t0}


def b3_estimate(ell, n_random=4, seed=0):
    """Uncertified estimate of the exact b = 3 leakage (center coordinate, H = {i*, i*-1, i*+1}) from
    below: the sup over x_L is taken over the two box corners extremising eta_i and ``n_random`` random
    corners, top region against bottom region; log N(R x T x T) by a 41 x 301 x 301 trapezoid grid in
    log space (its error is not bounded: an indication, not a certificate)."""
    from scipy.special import logsumexp

    cov = gp_covariance(N, ell)
    i = N // 2 - 1
    H = [i, i - 1, i + 1]
    C = [j for j in range(N) if j not in H]
    W = np.linalg.solve(cov[np.ix_(C, C)], cov[np.ix_(C, H)]).T
    S = cov[np.ix_(H, H)] - W @ cov[np.ix_(C, H)]
    P = np.linalg.inv(S)
    E = np.linalg.solve(S, W)

    def logbox(mu, r):
        grids = [np.linspace(r, r + DELTA, 41)] + [np.linspace(-GAMMA, GAMMA, 301)] * 2
        X = np.stack([x.ravel() for x in np.meshgrid(*grids, indexing="ij")], 1) - mu
        lf = -0.5 * np.einsum("ij,jk,ik->i", X, P, X)
        wts, h = np.ones(1), 1.0
        for g in grids:
            t = np.ones(len(g))
            t[0] = t[-1] = 0.5
            wts, h = np.multiply.outer(wts, t).ravel(), h * (g[1] - g[0])
        return logsumexp(lf + np.log(wts)) + math.log(h)

    marg = float(log_interval_prob(GAMMA - DELTA, GAMMA, 0, 1) - log_interval_prob(-GAMMA, -GAMMA + DELTA, 0, 1))
    rng = np.random.default_rng(seed)
    corners = [GAMMA * np.sign(E[0]), -GAMMA * np.sign(E[0])]
    corners += [GAMMA * np.sign(rng.standard_normal(len(C))) for _ in range(n_random)]
    best = -math.inf
    for xc in corners:
        mu = W @ xc
        d = logbox(mu, GAMMA - DELTA) - logbox(mu, -GAMMA)
        best = max(best, d - marg, marg - d)
    return best


def corner_lower(ell, sweeps=2):
    """Certified lower bounds of the exact leakage of the same splits (center coordinate, farthest L) for
    b = 2 .. n - 1: greedy search over corners of the box of x_L, top region against bottom region
    (:func:`puffgm.gaussian.monotone.corner_lower_bound`).  Returns {b: (lower bound, seconds)}."""
    from puffgm.gaussian.monotone import CornerOptions, corner_lower_bound

    cov = gp_covariance(N, ell)
    model = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA)
    i = N // 2 - 1
    others = [j for j in range(N) if j != i]
    corr = np.abs(cov[i, others])
    order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -corr))]
    corr_num, _ = model.marginal_corrections(i)
    out = {}
    for b in range(2, N):
        H = order[:b - 1]
        C = sorted(set(others) - set(H))
        t0 = time.perf_counter()
        lb, _, _ = corner_lower_bound(model, i, sorted(H), C, corr_num, options=CornerOptions(sweeps=sweeps))
        out[b] = (max(lb, 0.0), time.perf_counter() - t0)
    return out


def cell_splits(ell, bs, budget, seconds=None, checkpoint_dir=None, target=None, bonferroni=True, lazy_gap="auto"):
    """The b >= 4 splits (center coordinate, farthest L) with the cell engine: {b: {value, lower, cells,
    seconds}} (GaussianRegionModel.leakage with cell_budget; the value is certified, the lower bound is the
    engine's certified corner lower bound).  With ``checkpoint_dir`` each split resumes from its checkpoint
    there and keeps it up to date; ``cells_evaluated`` and ``engine_seconds`` then count every run.  With
    ``target`` each split stops once its certified value is at or below it.  ``bonferroni`` and ``lazy_gap``
    are the cell engine's options of those names."""
    cov = gp_covariance(N, ell)
    model = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA,
                                options=ModelOptions(cell_budget=budget, cell_seconds=seconds,
                                                     cell_checkpoint_dir=checkpoint_dir, cell_target=target,
                                                     cell_bonferroni=bonferroni, cell_lazy_gap=lazy_gap))
    i = N // 2 - 1
    others = [j for j in range(N) if j != i]
    corr = np.abs(cov[i, others])
    order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -corr))]
    out = {}
    for b in bs:
        H = order[:b - 1]
        C = sorted(set(others) - set(H))
        t0 = time.perf_counter()
        res = model.leakage(i, C)
        out[b] = {"value": res.value, "cells_value": res.details["cells"], "lower": res.details["bivariate_lower"],
                  "theorem9": res.theorem9, "seconds": time.perf_counter() - t0,
                  "cells_evaluated": res.details["cell_engine"].get("cells"),
                  "stopped": res.details["cell_engine"].get("stopped"),
                  "engine_seconds": res.details["cell_engine"].get("seconds"), "bonferroni": bool(bonferroni),
                  "lazy_gap": "box-tol" if lazy_gap is None else lazy_gap}
        if checkpoint_dir is not None:
            out[b]["checkpoint"] = res.details["cell_engine"].get("checkpoint")
        print(json.dumps({"l": ell, "b": b, **out[b]}), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plot", default=None)
    ap.add_argument("--all-nodes", action="store_true", help="also the max over every secret coordinate")
    ap.add_argument("--corner-lower", action="store_true",
                    help="only print certified lower bounds of the exact leakage for b = 2 .. n - 1 (corner search)")
    ap.add_argument("--cell-budget", type=int, default=0,
                    help="cells per split for the b >= 4 cell engine (0: off; Figure 2b's docs use 400)")
    ap.add_argument("--cell-seconds", type=float, default=None,
                    help="wall-time budget per split of the cell engine, on top of --cell-budget")
    ap.add_argument("--cell-target", type=float, default=None,
                    help="stop each cell-engine split once its certified value is at or below this number")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="keep each cell-engine split on disk in this directory and resume it from there "
                         "(--cell-budget then counts the cells of every run)")
    ap.add_argument("--cell-no-bonferroni", action="store_true",
                    help="cell engine without the Bonferroni sandwich (the engine before stop 22, and its checkpoints)")
    ap.add_argument("--cell-lazy-gap", default="auto",
                    help="the cell engine's lazy_gap: auto (default), box-tol (the first version of the sandwich) "
                         "or a number")
    ap.add_argument("--progress", action="store_true",
                    help="log the cell engine's progress (cells, certified value) on stderr")
    ap.add_argument("--ls", default=None, help="comma-separated length scales (default: 0.5,1,2,3,5)")
    ap.add_argument("--lower-json", default=None,
                    help="JSON of --corner-lower (certified lower bounds) to draw as x marks in --plot")
    ap.add_argument("--b3-estimate", action="store_true",
                    help="only print the uncertified b = 3 estimates (from below) for l in 1, 2, 3, 5")
    ap.add_argument("--cell-splits", default=None,
                    help="only run the cell engine on the splits b in this comma-separated list (one JSON line per "
                         "split), with --cell-budget cells and --ls length scales")
    ap.add_argument("--cell-json", nargs="+", default=None,
                    help="JSON lines of --cell-splits runs: with --merge, each split's certified value lowers the "
                         "curve at its b and every larger b (the curve is non-increasing)")
    ap.add_argument("--merge", nargs="+", default=None,
                    help="JSON outputs of earlier runs (e.g. one per --ls) to merge, print and plot without computing")
    args = ap.parse_args()
    if args.progress:
        import logging

        logging.basicConfig(format="%(asctime)s %(message)s")
        logging.getLogger("puffgm.gaussian.multivariate").setLevel(logging.DEBUG)
    if args.cell_lazy_gap in ("auto", "box-tol"):
        lazy = None if args.cell_lazy_gap == "box-tol" else "auto"
    else:
        try:
            lazy = float(args.cell_lazy_gap)
        except ValueError:
            ap.error(f"--cell-lazy-gap must be auto, box-tol or a number, not {args.cell_lazy_gap!r}")
    if args.cell_splits:
        bs = [int(v) for v in args.cell_splits.split(",")]
        for ell in (LS if args.ls is None else tuple(float(v) for v in args.ls.split(","))):
            cell_splits(ell, bs, args.cell_budget or 400, args.cell_seconds, args.checkpoint_dir, args.cell_target,
                        not args.cell_no_bonferroni, lazy)
        return
    if args.corner_lower:
        print(json.dumps({str(ell): corner_lower(ell) for ell in LS}, indent=1))
        return
    if args.b3_estimate:
        print(json.dumps({str(ell): b3_estimate(ell) for ell in (1.0, 2.0, 3.0, 5.0)}, indent=1))
        return
    out = {"n": N, "gamma": GAMMA, "delta": DELTA, "machine": "2-core machine, shared with other jobs",
           "cell_budget": args.cell_budget, "curves": {}}
    ls = LS if args.ls is None else tuple(float(v) for v in args.ls.split(","))
    if args.merge:
        for fn in args.merge:
            with open(fn) as fh:
                part = json.load(fh)
            out["curves"].update(part["curves"])
            out["cell_budget"] = part.get("cell_budget", 0)
        ls = tuple(sorted(float(v) for v in out["curves"]))
        out["curves"] = {str(ell): out["curves"][str(ell)] for ell in ls}
        for fn in args.cell_json or []:
            with open(fn) as fh:
                for line in fh:
                    if not line.strip():
                        continue
                    rec = json.loads(line)
                    cur = out["curves"].get(str(float(rec["l"])))
                    if cur is None:
                        continue
                    cur.setdefault("cell_splits", {})[str(rec["b"])] = rec
                    a = cur.setdefault("certified_center_cells", list(cur["certified_center"]))
                    for bb in range(rec["b"], len(a) + 1):
                        a[bb - 1] = min(a[bb - 1], rec["value"])
    for ell in ([] if args.merge else ls):
        t0 = time.perf_counter()
        th9 = gp_region_curve(N, ell, GAMMA, DELTA, center_only=True, options=CurveOptions(value="theorem9"))
        t1 = time.perf_counter()
        cert = gp_region_curve(N, ell, GAMMA, DELTA, center_only=True,
                               options=CurveOptions(pinned_engines=True, cell_budget=args.cell_budget))
        t2 = time.perf_counter()
        rec = {"theorem9": list(th9.a), "certified_center": list(cert.a),
               "seconds_theorem9": t1 - t0, "seconds_certified_center": t2 - t1,
               "b2": b2_bracket(ell), "b3": b3_bracket(ell)}
        if args.all_nodes:
            t3 = time.perf_counter()
            opts = CurveOptions(pinned_engines=True, cell_budget=args.cell_budget)
            rec["certified_all"] = list(gp_region_curve(N, ell, GAMMA, DELTA, options=opts).a)
            rec["seconds_certified_all"] = time.perf_counter() - t3
        out["curves"][str(ell)] = rec
    print(json.dumps(out, indent=1))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(9.6, 5.0))
        b = np.arange(1, N + 1)
        lows = {}
        if args.lower_json:
            with open(args.lower_json) as fh:
                lows = json.load(fh)
        floor = 1e-15  # zeros (and Theorem 9's values below double-precision resolution) are drawn here
        for k, ell in enumerate(ls):
            rec = out["curves"][str(ell)]
            col = f"C{k}"
            ax.plot(b, np.maximum(rec["theorem9"], floor), "--", color=col, alpha=0.8, label=f"Theorem 9, l={ell:g}")
            ax.step(b, np.maximum(rec.get("certified_center_cells", rec["certified_center"]), floor), where="post",
                    color=col, lw=2, label=f"certified, l={ell:g}")
            if rec["b2"]["lower"] > floor:
                ax.plot([2], [rec["b2"]["lower"]], "x", color=col, ms=8)
            if rec["b3"]["lower"] > floor:
                ax.plot([3], [rec["b3"]["lower"]], "x", color=col, ms=8)
            for bb, (lb, _) in lows.get(str(ell), {}).items():
                if int(bb) >= 4 and lb > floor:
                    ax.plot([int(bb)], [lb], "x", color=col, ms=6)
        ax.set_yscale("log")
        ax.set_xlabel("b: number of high-influence coordinates (card(H))")
        ax.set_ylabel("a(b): leakage through the low-influence set (nats, log scale)")
        ax.set_title("Figure 2b (n=20, gamma=5, delta=0.1): Theorem 9 vs certified bound\n"
                     "x: certified lower bounds of the exact leakage; 0 drawn at 1e-15")
        ax.set_ylim(floor / 3, None)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(ncol=1, fontsize=7, bbox_to_anchor=(1.02, 1.0), loc="upper left")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
