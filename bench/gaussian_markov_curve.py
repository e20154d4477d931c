"""Certified a(b) curves of a Gaussian Markov prior in the pinned regime (the monotone engine).

Prior: n coordinates with the Ornstein-Uhlenbeck (AR(1)) kernel Sigma_jk = exp(-|j - k| / l) (a Markov
chain: tridiagonal precision with negative off-diagonals, so every conditional precision is
sign-balanced and :mod:`puffgm.gaussian.monotone` applies), truncated to [-gamma, gamma]^n, region
secrets of width delta, center coordinate, farthest low-influence set.  For each l it prints Theorem 9's
curve, the certified curve without the pinned-regime engines (Bonferroni, range, precision-Lipschitz; the
marginal term with box probabilities where Bonferroni's is large, puffgm.gaussian.marginal),
the certified curve with them (bivariate engine at b = 2, hybrid and monotone engine at b >= 3), the
certified lower bound of the exact leakage of every split (corner search), and the seconds per curve.

    python bench/gaussian_markov_curve.py --plot docs/gaussian/markov_curve.png
    python bench/gaussian_markov_curve.py --from-json out.json --plot docs/gaussian/markov_curve.png  # re-plot
"""

import argparse
import json
import time

import numpy as np

from puffgm.gaussian.closed_forms import CurveOptions, gaussian_region_curve
from puffgm.gaussian.leakage import GaussianRegionModel
from puffgm.gaussian.monotone import corner_lower_bound

N, GAMMA, DELTA = 10, 5.0, 0.1
LS = (5.0, 20.0)


def ou_covariance(n, ell):
    idx = np.arange(n)
    return np.exp(-np.abs(idx[:, None] - idx[None, :]) / ell)


def lower_bounds(cov, i):
    """Certified lower bounds of the exact leakage of the farthest splits b = 2 .. n - 1 (corner search)."""
    model = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA)
    n = len(cov)
    others = [j for j in range(n) if j != i]
    order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -np.abs(cov[i, others])))]
    corr_num, _ = model.marginal_corrections(i)
    out = []
    for b in range(2, n):
        H = sorted(order[:b - 1])
        C = sorted(set(others) - set(H))
        out.append(max(0.0, corner_lower_bound(model, i, H, C, corr_num)[0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plot", default=None)
    ap.add_argument("--from-json", default=None, help="re-plot the JSON a previous run printed (no computation)")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as fh:
            out = json.load(fh)
        if args.plot:
            plot(out, args.plot)
        return
    out = {"n": N, "gamma": GAMMA, "delta": DELTA, "kernel": "exp(-|j-k|/l)", "center": N // 2 - 1,
           "machine": "2-core machine, shared with other jobs", "curves": {}}
    for ell in LS:
        cov = ou_covariance(N, ell)
        nodes = [N // 2 - 1]
        t0 = time.perf_counter()
        th9 = gaussian_region_curve(cov, -GAMMA, GAMMA, DELTA,
                                    options=CurveOptions(nodes=nodes, search="farthest", value="theorem9"))
        t1 = time.perf_counter()
        plain = gaussian_region_curve(cov, -GAMMA, GAMMA, DELTA, options=CurveOptions(nodes=nodes, search="farthest"))
        t2 = time.perf_counter()
        pinned = gaussian_region_curve(cov, -GAMMA, GAMMA, DELTA,
                                       options=CurveOptions(nodes=nodes, search="farthest", pinned_engines=True))
        t3 = time.perf_counter()
        low = lower_bounds(cov, N // 2 - 1)
        t4 = time.perf_counter()
        out["curves"][str(ell)] = {"theorem9": list(th9.a), "certified_default": list(plain.a),
                                 "certified_pinned_engines": list(pinned.a), "lower_b2_to_n-1": low,
                                 "seconds_theorem9": t1 - t0, "seconds_default": t2 - t1,
                                 "seconds_pinned_engines": t3 - t2, "seconds_lower": t4 - t3}
    print(json.dumps(out, indent=1))
    if args.plot:
        plot(out, args.plot)


def plot(out, path):
    """The figure of docs/gaussian.md from the bench's JSON record."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 4.6))
    b = np.arange(1, N + 1)
    for k, ell in enumerate(LS):
        rec = out["curves"][str(ell)]
        col = f"C{k}"
        ax.plot(b, np.maximum(rec["theorem9"], 1e-3), "--", color=col, alpha=0.8, label=f"Theorem 9, l={ell:g}")
        ax.step(b, np.maximum(rec["certified_default"], 1e-3), where="post", color=col, lw=1, alpha=0.5,
                label=f"certified, no pinned engines, l={ell:g}")
        ax.step(b, np.maximum(rec["certified_pinned_engines"], 1e-3), where="post", color=col, lw=2,
                label=f"certified, pinned engines, l={ell:g}")
        low = np.array(rec["lower_b2_to_n-1"])
        ax.plot(b[1:-1][low > 0], low[low > 0], "x", color=col, ms=7)  # 0: not informative
    ax.set_yscale("log")
    ax.set_xlabel("b: number of high-influence coordinates (card(H))")
    ax.set_ylabel("a(b) (nats, log scale)")
    ax.set_title(f"Markov (OU) prior, n={N}, gamma={GAMMA:g}, delta={DELTA:g}: certified curves\n"
                 "x: certified lower bounds of the exact leakage")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1.0), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
