"""SuLQ k-means under Blowfish policies: the shape of Figure 1 of He, Machanavajjhala and Ding (2014).

Data: the RGB pixels of scikit-learn's bundled sample image ``china.jpg`` (no
download; a colour data set like the paper's skin-segmentation B, G, R values).
A seeded sample of 2450 pixels (the size of the paper's skin01), each channel
discretised to 16 levels, so the domain is the 16 x 16 x 16 grid and ranks are
units of 16 intensity levels.

For each epsilon and policy we run SuLQ k-means (K = 4, 10 iterations) 20 times
and plot the mean (with lower and upper quartiles) of the ratio of its
objective to that of non-private k-means (scikit-learn KMeans, n_init=10).
Policies: Laplace (= complete graph, differential privacy), distance threshold
theta = 1, 2, 4 ranks (L1), the attribute graph, and a partition into 4x4x4
cells.  Dashed: the paper's own (unsafe, see docs/blowfish.md) sum sensitivity
max_{(x,y) in E} d(x, y) for theta = 1, which is what the paper's Figure 1 used.

Seeded noise: NOT for production.  Output: docs/blowfish/kmeans.png and one
JSON line with the means and the run time.

Run: python examples/blowfish_kmeans.py
"""

import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from puffgm.blowfish import (  # noqa: E402
    Domain,
    Policy,
    attribute_graph,
    complete_graph,
    distance_threshold_graph,
    grid_partition_blocks,
    partition_graph,
)
from puffgm.blowfish.kmeans import KMeansOptions, kmeans_objective, sulq_kmeans  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "blowfish" / "kmeans.png"


def load_pixels(n=2450, levels=16, seed=0):
    from sklearn.datasets import load_sample_image

    img = load_sample_image("china.jpg").reshape(-1, 3)
    rng = np.random.default_rng(seed)
    px = img[rng.choice(len(img), size=n, replace=False)]
    return (px.astype(int) * levels) // 256


def main(epsilons=(0.1, 0.2, 0.5, 1.0, 2.0), reps=20, k=4, iterations=10, plot=True):
    from sklearn.cluster import KMeans

    t0 = time.perf_counter()
    levels = 16
    ranks = load_pixels(levels=levels)
    dom = Domain.grid({"R": levels, "G": levels, "B": levels})
    data = np.ravel_multi_index(ranks.T, dom.shape)
    x = ranks.astype(float)
    base = kmeans_objective(x, KMeans(n_clusters=k, n_init=10, random_state=0).fit(x).cluster_centers_)
    policies = {
        "Laplace (complete graph = DP)": Policy(complete_graph(dom)),
        "partition 4x4x4 cells": Policy(partition_graph(dom, grid_partition_blocks(dom, [4, 4, 4]))),
        "attribute graph": Policy(attribute_graph(dom)),
        "distance theta=4": Policy(distance_threshold_graph(dom, 4)),
        "distance theta=2": Policy(distance_threshold_graph(dom, 2)),
        "distance theta=1": Policy(distance_threshold_graph(dom, 1)),
    }
    runs = {name: (pol, None) for name, pol in policies.items()}
    runs["distance theta=1, paper's sensitivity (unsafe)"] = (policies["distance theta=1"], (2.0, 1.0))
    rng = np.random.default_rng(1)
    stats = {}
    for name, (pol, override) in runs.items():
        rows = []
        for eps in epsilons:
            ratios = []
            for _ in range(reps):
                init = rng.uniform(0, levels - 1, size=(k, 3))
                opts = KMeansOptions(iterations=iterations, init=init, sensitivity_override=override)
                res = sulq_kmeans(data, pol, k, epsilon=eps, random_state=rng, options=opts)
                ratios.append(res.objective / base)
            rows.append((float(np.mean(ratios)), float(np.percentile(ratios, 25)), float(np.percentile(ratios, 75))))
        stats[name] = rows
    elapsed = time.perf_counter() - t0
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name, rows in stats.items():
            m = np.array(rows)
            style = "--" if "unsafe" in name else "-"
            line, = ax.plot(epsilons, m[:, 0], style + "o", markersize=4, label=name)
            ax.fill_between(epsilons, m[:, 1], m[:, 2], color=line.get_color(), alpha=0.12)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epsilon (total privacy budget)")
        ax.set_ylabel("objective / non-private k-means objective")
        ax.set_title("SuLQ k-means under Blowfish: china.jpg pixels (n=2450, 16^3 RGB grid, K=4)\n"
                     "mean over runs, band = lower/upper quartile", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(OUT, dpi=120)
    mean_ratio = {n: [round(r[0], 3) for r in v] for n, v in stats.items()}
    print(json.dumps({"epsilons": list(epsilons), "mean_ratio": mean_ratio,
                      "reps": reps, "seconds": round(elapsed, 1)}))
    return stats


if __name__ == "__main__":
    main()
