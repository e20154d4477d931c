"""Bai et al. Tables 2-5 (and 7-8) analogues: noisy top-K per group on real categorical sequences.

Bai, He, Gu, Kifer and Maeng, section 7: "within each group, what are the
top-K most frequent categories?", answered by

* **Ours-Exp** -- K exponential-mechanism draws without replacement at
  epsilon_DP / K each, epsilon_DP translated from epsilon_puffer along the
  a(b)-influence curve of the fitted chain (Theorem 6;
  :class:`puffgm.mechanisms.pufferfish.PufferfishTopK`, utility = count, sensitivity 1);
* **MQM** -- the Markov Quilt Mechanism (Song et al.; :class:`puffgm.chains.MQMExact`)
  on each of the m category counts at epsilon_puffer / m, noisy counts sorted;
* **GroupDP-Exp** -- the same top-K exponential mechanism at epsilon_DP = epsilon_puffer / T
  (the trivial curve point (0, T): the whole sequence is one group);
* **GroupDP-Lap** -- Laplace counts at scale m T / epsilon_puffer, sorted.

The prior is a first-order chain fitted on a training period with the
smoothing of appendix D.2 (tau = 1e-5, :meth:`puffgm.chains.ChainPriorClass.fit`),
stationary start, of the length T of each test group; the queries are
answered on the held-out test period (section 7.1.4).

Data (shipped inside the ``vega_datasets`` wheel, nothing downloaded):

* ``seattle-weather``: daily weather label (5 categories) 2012-2015; train
  2012-2013, test groups = the 24 months of 2014-2015 (T = 28..31);
* ``seattle-weather``'s daily wind speed cut into 11 equal-width levels (as above);
* ``seattle-temps``: hourly temperature 2010 cut into 11 equal-width levels
  (edges from the training part; 11 like Capture24's activities); train
  January-September, test groups = the 92 days of October-December (T = 24).

Metrics (section 7.1.5), averaged over groups and trials.  Ties in the true
counts are resolved in the prediction's favour: rank k is correct when the
predicted category's count equals the true k-th count (any tie-break is an
equally "exact" ranking); a hit is a predicted category whose count reaches
the true K-th count.  The noise of the trials comes from seeded numpy
generators (simulations, reproducible; releases made this way are marked
``secure=False`` by the library).
"""

from __future__ import annotations

import math
import pathlib
import time
from typing import Any, NamedTuple

import numpy as np

__all__ = ["TITLE", "run", "run_dataset", "ranking_metrics", "load_weather", "load_wind", "load_temps", "DATASETS"]

TITLE = "Bai et al. Tables 2-5, 7-8: noisy top-K per group (Ours-Exp, MQM, GroupDP)"

EPSILONS = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0)
MECHANISMS = ("Ours-Exp", "MQM", "GroupDP-Exp", "GroupDP-Lap")
TAU = 1e-5

# ---------------------------------------------------------------- the paper's numbers
# Table 2 (Foursquare, top-3, Acc@1..3) and Table 3 (HR, NDCG, L1); Tables 4-5 (Capture24, top-3);
# Tables 7-8 (Foursquare, top-5; Table 8's caption says "Top-3", a slip: it continues Table 7).
# Rows: epsilon 0.5, 1, 2, 3, 4, 5; per mechanism in MECHANISMS order.
PAPER_ACC: dict[str, list[list[list[float]]]] = {
    "foursquare-3": [
        [[79.01, 63.10, 58.47], [36.31, 26.69, 20.83], [15.68, 10.49, 7.31], [2.72, 1.61, 1.57]],
        [[88.47, 76.65, 72.47], [46.35, 36.29, 30.56], [22.60, 14.50, 10.98], [5.08, 2.25, 2.02]],
        [[94.03, 85.72, 82.84], [60.80, 47.50, 43.00], [31.95, 21.25, 15.80], [8.91, 4.33, 3.25]],
        [[95.71, 89.59, 87.71], [72.08, 55.26, 50.84], [37.08, 25.96, 19.95], [11.30, 6.40, 4.43]],
        [[96.70, 91.72, 90.42], [79.11, 61.74, 56.99], [40.58, 29.53, 23.32], [12.95, 8.02, 5.43]],
        [[97.30, 93.03, 92.10], [83.37, 66.91, 61.99], [43.56, 32.47, 26.15], [14.26, 9.31, 6.36]],
    ],
    "capture24-3": [
        [[17.34, 13.86, 10.14], [14.09, 12.32, 10.00], [9.56, 9.33, 9.28], [9.25, 9.34, 9.16]],
        [[31.78, 20.62, 12.08], [21.68, 16.27, 10.93], [10.00, 9.65, 9.38], [9.51, 9.57, 9.19]],
        [[60.34, 44.09, 25.62], [41.20, 27.08, 16.21], [11.05, 10.29, 9.52], [10.11, 10.01, 9.36]],
        [[78.30, 65.10, 44.68], [57.70, 41.44, 25.60], [12.14, 10.91, 9.64], [10.67, 10.27, 9.45]],
        [[88.47, 79.68, 59.98], [70.16, 54.99, 36.82], [13.28, 11.52, 9.77], [11.25, 10.67, 9.55]],
        [[93.9, 88.6, 69.7], [77.8, 64.5, 46.2], [15.6, 12.6, 9.8], [12.6, 11.6, 9.4]],
    ],
    "foursquare-5": [
        [[69.30, 53.79, 49.34, 43.17, 39.47], [36.28, 26.70, 20.80, 18.66, 16.87],
         [12.59, 7.49, 5.08, 4.49, 3.34], [2.67, 1.62, 1.55, 1.47, 1.41]],
        [[83.51, 68.80, 64.20, 57.00, 51.01], [46.34, 36.31, 30.53, 26.71, 24.63],
         [17.11, 11.46, 8.26, 7.89, 6.06], [5.05, 2.25, 2.01, 1.76, 1.59]],
        [[91.81, 80.86, 76.87, 71.24, 66.33], [60.83, 47.42, 43.05, 37.33, 34.42],
         [24.96, 15.97, 12.04, 11.55, 9.80], [8.90, 4.31, 3.25, 2.54, 2.12]],
        [[93.99, 85.71, 82.82, 79.44, 76.18], [72.16, 55.30, 50.86, 44.87, 40.70],
         [30.51, 20.07, 14.97, 13.91, 12.25], [11.27, 6.35, 4.43, 3.64, 2.81]],
        [[95.30, 88.49, 86.38, 84.46, 82.02], [79.14, 61.81, 57.00, 50.67, 45.63],
         [34.27, 23.34, 17.65, 15.90, 14.14], [12.89, 7.99, 5.43, 4.83, 3.59]],
        [[96.14, 90.35, 88.74, 87.61, 85.57], [83.42, 66.98, 62.01, 55.34, 49.82],
         [37.08, 26.00, 19.99, 17.67, 15.75], [14.22, 9.25, 6.37, 5.90, 4.42]],
    ],
}
# (HR %, NDCG, L1) per mechanism
PAPER_RANK: dict[str, list[list[tuple[float, float, float]]]] = {
    "foursquare-3": [
        [(78.7, 0.937, 765), (37.6, 0.726, 5500), (18.1, 0.607, 18972), (5.4, 0.527, 88317)],
        [(89.3, 0.977, 295), (49.8, 0.791, 3025), (24.0, 0.644, 12760), (7.6, 0.542, 65915)],
        [(94.4, 0.987, 105), (64.3, 0.868, 1554), (31.9, 0.698, 7740), (11.2, 0.565, 41510)],
        [(96.3, 0.993, 69), (73.3, 0.917, 913), (37.8, 0.734, 5412), (13.5, 0.579, 30441)],
        [(97.2, 0.994, 60), (79.2, 0.946, 571), (42.6, 0.761, 4200), (15.3, 0.589, 24898)],
        [(97.8, 0.994, 56), (83.4, 0.964, 386), (46.6, 0.782, 3470), (16.8, 0.598, 21625)],
    ],
    "capture24-3": [
        [(39.3, 0.673, 192.3), (35.1, 0.641, 203.2), (28.0, 0.591, 219.6), (27.9, 0.590, 219.8)],
        [(54.3, 0.776, 151.0), (44.6, 0.706, 179.0), (28.9, 0.597, 217.8), (28.4, 0.593, 218.7)],
        [(73.4, 0.908, 73.4), (61.2, 0.825, 123.6), (30.4, 0.608, 214.1), (29.4, 0.600, 216.3)],
        [(82.4, 0.957, 35.8), (71.5, 0.896, 79.8), (32.1, 0.620, 210.2), (30.4, 0.608, 214.2)],
        [(87.93, 0.980, 18.6), (78.4, 0.937, 51.3), (33.8, 0.632, 206.3), (31.6, 0.615, 211.8)],
        [(91.2, 0.989, 10.0), (82.6, 0.959, 35.5), (37.1, 0.655, 198.1), (33.7, 0.630, 207.1)],
    ],
    "foursquare-5": [
        [(69.7, 0.892, 2018), (39.5, 0.724, 8769), (16.7, 0.588, 41385), (8.2, 0.530, 120705)],
        [(83.1, 0.957, 793), (51.2, 0.789, 4863), (21.6, 0.616, 26461), (10.3, 0.545, 94380)],
        [(92.0, 0.985, 252), (64.4, 0.860, 2529), (27.5, 0.655, 17358), (13.5, 0.566, 63723)],
        [(95.0, 0.991, 149), (72.8, 0.910, 1540), (32.2, 0.686, 13227), (15.6, 0.580, 48132)],
        [(96.5, 0.993, 109), (78.6, 0.940, 1008), (36.2, 0.711, 10599), (17.4, 0.591, 39549)],
        [(97.2, 0.994, 96), (82.8, 0.959, 706), (39.7, 0.731, 8829), (18.9, 0.599, 34123)],
    ],
}
PAPER_TABLES = {"foursquare-3": "Tables 2-3 (Foursquare, 78 labels)",
                "capture24-3": "Tables 4-5 (Capture24, 11 activities)",
                "foursquare-5": "Tables 7-8 (Foursquare, top-5)"}


# ---------------------------------------------------------------- data
def load_weather():
    """(train individuals, test groups, categories, description, T) for seattle-weather.

    Individuals are calendar months cut to their first 28 days (one chain each);
    a group is a quarter of the test years (three individuals, 84 entries).
    """
    from vega_datasets import local_data

    d = local_data.seattle_weather()
    cats = sorted(d["weather"].unique())
    idx = {c: i for i, c in enumerate(cats)}
    d = d.assign(state=d["weather"].map(idx), year=d["date"].dt.year, month=d["date"].dt.month)
    T = 28
    months = {(y, m): g["state"].to_numpy()[:T] for (y, m), g in d.groupby(["year", "month"])}
    train = [v for (y, _m), v in months.items() if y <= 2013]
    test = []
    for y in (2014, 2015):
        for q in range(4):
            test.append((f"{y}Q{q + 1}", [months[(y, 3 * q + j + 1)] for j in range(3)]))
    return train, test, cats, ("vega_datasets seattle-weather: daily weather label, 5 categories; individuals = "
                               "calendar months cut to 28 days (independent chains, $T = 28$); prior fitted on the "
                               "24 months of 2012-2013; one group per quarter of 2014-2015 (8 groups of 3 "
                               "individuals, 84 entries)"), T


def load_wind(n_states: int = 11):
    """(train individuals, test groups, categories, description, T) for seattle-weather's daily wind speed.

    The wind speed cut into ``n_states`` equal-width levels (edges from the training
    years); individuals and groups as in :func:`load_weather`.
    """
    from vega_datasets import local_data

    d = local_data.seattle_weather()
    d = d.assign(year=d["date"].dt.year, month=d["date"].dt.month)
    tr = d[d["year"] <= 2013]
    edges = np.linspace(tr["wind"].min(), tr["wind"].max(), n_states + 1)
    d = d.assign(state=np.clip(np.digitize(d["wind"].to_numpy(), edges[1:-1]), 0, n_states - 1))
    T = 28
    months = {(y, m): g["state"].to_numpy()[:T] for (y, m), g in d.groupby(["year", "month"])}
    train = [v for (y, _m), v in months.items() if y <= 2013]
    test = [(f"{y}Q{q + 1}", [months[(y, 3 * q + j + 1)] for j in range(3)]) for y in (2014, 2015) for q in range(4)]
    cats = [f"{edges[i]:.1f}-{edges[i + 1]:.1f} m/s" for i in range(n_states)]
    return train, test, cats, (f"vega_datasets seattle-weather: daily mean wind speed in {n_states} equal-width "
                               "levels (edges from the training years; 11 like Capture24's activities); "
                               "individuals = calendar months cut to 28 days (independent chains, $T = 28$); prior "
                               "fitted on 2012-2013; one group per quarter of 2014-2015 (8 groups of 3 individuals, "
                               "84 entries)"), T


def load_temps(n_states: int = 11):
    """(train individuals, test groups, categories, description, T) for seattle-temps, cut into levels.

    Individuals are days (24 hourly levels, one chain each); a group is a week of
    the test months (seven individuals, 168 entries).
    """
    from vega_datasets import local_data

    d = local_data.seattle_temps()
    d = d.assign(month=d["date"].dt.month, day=d["date"].dt.date)
    tr = d[d["month"] <= 9]
    edges = np.linspace(tr["temp"].min(), tr["temp"].max(), n_states + 1)
    state = np.clip(np.digitize(d["temp"].to_numpy(), edges[1:-1]), 0, n_states - 1)
    d = d.assign(state=state)
    T = 24
    days = [(day, g["state"].to_numpy(), g["month"].iloc[0]) for day, g in d.groupby("day")]
    days = [x for x in days if x[1].size == T]  # the file ends one hour short
    train = [v for _day, v, m in days if m <= 9]
    test_days = [(day, v) for day, v, m in days if m >= 10]
    test = [(f"week of {test_days[i][0]}", [v for _d, v in test_days[i:i + 7]])
            for i in range(0, len(test_days) - 6, 7)]
    cats = [f"{edges[i]:.0f}-{edges[i + 1]:.0f}F" for i in range(n_states)]
    return train, test, cats, (f"vega_datasets seattle-temps: hourly temperature 2010 in {n_states} equal-width "
                               "levels (edges from the training months); individuals = days (independent chains, "
                               "$T = 24$); prior fitted on the days of January-September; one group per week of "
                               f"October-December ({len(test)} groups of 7 individuals, 168 entries)"), T


DATASETS = {"seattle-weather": load_weather, "seattle-wind": load_wind, "seattle-temps": load_temps}
# which paper table each (dataset, K) is set beside
PAPER_KEY = {("seattle-weather", 3): "foursquare-3", ("seattle-wind", 3): "capture24-3",
             ("seattle-temps", 3): "capture24-3", ("seattle-weather", 5): "foursquare-5",
             ("seattle-wind", 5): "foursquare-5", ("seattle-temps", 5): "foursquare-5"}


# ---------------------------------------------------------------- metrics
def ranking_metrics(counts: np.ndarray, pred, k: int) -> dict:
    """Acc@1..K, HR@K, NDCG@K and L1 count error of one predicted ranking (Bai et al. section 7.1.5).

    Ties in ``counts`` count in the prediction's favour (see the module docstring).
    """
    c = np.asarray(counts, dtype=float)
    true_sorted = np.sort(c)[::-1][:k]
    pc = c[list(pred)]
    acc = (pc == true_sorted).astype(float)
    hr = float(np.mean(pc >= true_sorted[-1])) if true_sorted[-1] > 0 else float(np.mean(pc >= true_sorted[-1]))
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    idcg = float(true_sorted @ disc)
    ndcg = float(pc @ disc) / idcg if idcg > 0 else 1.0
    return {"acc": acc, "hr": hr, "ndcg": ndcg, "l1": float(np.abs(pc - true_sorted).sum())}


# ---------------------------------------------------------------- the experiment
def _mechanisms(theta, curve, T, m, k, eps):
    """The four mechanisms at one epsilon: two top-K objects and two Laplace scales."""
    from puffgm.chains import MQMExact
    from puffgm.core.curve import curve_from_points
    from puffgm.mechanisms.pufferfish import PufferfishTopK

    trivial = curve_from_points([(T, 0.0)], n_entries=T, method="group DP (trivial point)")
    ours = PufferfishTopK(curve, epsilon=eps, k=k)
    cal = MQMExact(theta).calibrate(epsilon=eps / m)
    return {"ours": ours, "gdp": PufferfishTopK(trivial, epsilon=eps, k=k), "mqm_scale": float(cal.scale),
            "gdp_lap_scale": m * T / eps, "point": ours.point}


def _summarise(rows) -> dict:
    """Means over groups and trials (Acc and HR in %), with standard errors (``se_*``)."""
    acc = np.array([r["acc"] for r in rows])
    out = {"acc": (100 * acc.mean(axis=0)).tolist(),
           "se_acc": (100 * acc.std(axis=0, ddof=1) / math.sqrt(len(rows))).tolist()}
    for key, f in (("hr", 100.0), ("ndcg", 1.0), ("l1", 1.0)):
        v = f * np.array([r[key] for r in rows])
        out[key] = float(v.mean())
        out["se_" + key] = float(v.std(ddof=1) / math.sqrt(len(rows)))
    return out


def run_dataset(name: str, k: int, *, epsilons=EPSILONS, trials: int = 200, seed: int = 0, progress=None,
                tick=None) -> dict:
    """All four mechanisms on one data set at one K; returns means per epsilon and mechanism."""
    from puffgm.chains import ChainPriorClass

    train, test, cats, desc, T = DATASETS[name]()
    m = len(cats)
    theta = ChainPriorClass.fit(train, length=T, states=range(m), initial="stationary", tau=TAU)
    from puffgm.api import influence_curve

    curve = influence_curve(theta)
    counts = [np.bincount(np.concatenate(g), minlength=m).astype(float) for _, g in test]
    train_counts = np.bincount(np.concatenate(train), minlength=m).astype(float)
    majority = tuple(int(i) for i in np.argsort(-train_counts, kind="stable")[:k])
    rng = np.random.default_rng(seed)
    results = {}
    maj = [ranking_metrics(c, majority, k) for c in counts]
    results["majority"] = {"acc": np.mean([r["acc"] for r in maj], axis=0).tolist(),
                           "hr": float(np.mean([r["hr"] for r in maj])),
                           "ndcg": float(np.mean([r["ndcg"] for r in maj])),
                           "l1": float(np.mean([r["l1"] for r in maj]))}
    points = {}
    for eps in epsilons:
        mt = _mechanisms(theta, curve, T, m, k, eps)
        a, b = mt["point"]
        points[eps] = _CurveUse(a, b, mt["ours"].epsilon_dp, mt["mqm_scale"])
        acc: dict[str, list[dict]] = {mm: [] for mm in MECHANISMS}
        for c in counts:
            for _ in range(trials):
                preds = {
                    "Ours-Exp": mt["ours"].release(c, random_state=rng).value,
                    "GroupDP-Exp": mt["gdp"].release(c, random_state=rng).value,
                    "MQM": tuple(np.argsort(-(c + rng.laplace(0.0, mt["mqm_scale"], m)), kind="stable")[:k]),
                    "GroupDP-Lap": tuple(
                        np.argsort(-(c + rng.laplace(0.0, mt["gdp_lap_scale"], m)), kind="stable")[:k]),
                }
                for mm, p in preds.items():
                    acc[mm].append(ranking_metrics(c, p, k))
            if tick is not None:
                tick()
        results[eps] = {mm: _summarise(v) for mm, v in acc.items()}
    return {"name": name, "k": k, "m": m, "categories": cats, "description": desc, "results": results,
            "points": points, "n_groups": len(test), "T": T, "trials": trials, "curve": curve,
            "mean_count": float(np.mean([c.sum() for c in counts])),
            "zero_kth": int(sum(np.sort(c)[::-1][k - 1] == 0 for c in counts))}


class _CurveUse(NamedTuple):
    """The curve point (a, b) Ours-Exp uses at one epsilon, its epsilon_DP and MQM's Laplace scale per count."""

    a: float
    b: int
    epsilon_dp: float
    mqm_scale: float


class _Disagreement(NamedTuple):
    """A cell where another mechanism beats Ours-Exp: ``kind`` "same" (the same mechanism here) or "cell"."""

    kind: str
    where: str
    text: str


def _fmt_pct(x):
    return f"{x:.1f}%"


def _paper_cells(key, i, j, what):
    if key is None or i is None:
        return None
    if what == "acc":
        return PAPER_ACC[key][i][j]
    return PAPER_RANK[key][i][j]


def _section(res, paper_eps_index) -> tuple:
    name, k = res["name"], res["k"]
    key = PAPER_KEY.get((name, k))
    zk = res["zero_kth"]
    ties = (f" In {zk} of {res['n_groups']} groups the true {k}th count is 0, so every unoccupied category ties "
            "for it (HR and the last Acc@k are inflated alike for every mechanism)." if zk else "")
    if res["m"] == k:
        ties += f" Top-{k} of {k} categories is a full ranking: HR@{k} is 100% by construction."
    lines = [f"### {name}, top-{k}", "",
             res["description"] + f"; {res['trials']} trials per group and $\\epsilon$." + ties, ""]
    # curve points
    pts, T, curve = res["points"], res["T"], res["curve"]
    if all(pts[e].b >= T for e in pts):
        note = (" Every $\\epsilon$ uses the trivial point $(0, T)$: the chain is so persistent that no smaller "
                "$b$ has "
                "$a(b) < \\epsilon$, so Ours-Exp *is* GroupDP-Exp here and MQM's calibration is group DP's too.")
    else:
        note = ""
    lines.append(f"Fitted chain's curve: $a(1) = {curve.a_at(1):.3g}$, $a(2) = {curve.a_at(2):.3g}$, "
                 f"$a({min(T, 5)}) = {curve.a_at(min(T, 5)):.3g}$, $a({T}) = 0$ ($T = {T}$). Curve point used by "
                 "Ours-Exp "
                 "and MQM's scale per count: " + "; ".join(
                     f"$\\epsilon = {e:g}$: $(a, b) = ({pts[e].a:.3g}, {pts[e].b})$, "
                     f"$\\epsilon_{{\\mathrm{{DP}}}} = {pts[e].epsilon_dp:.3g}$, "
                     f"MQM scale {pts[e].mqm_scale:.3g}" for e in pts) + "." + note)
    lines.append("")
    # Acc table
    head = "| $\\epsilon$ | " + " | ".join(f"{mm} Acc@{j + 1}" for mm in MECHANISMS for j in range(k)) + " |"
    lines += [f"Acc@k in %, ours (paper {PAPER_TABLES[key]})." if key else "Acc@k in %.", "", head,
              "|" + " --- |" * (1 + len(MECHANISMS) * k)]
    disagreements = []
    for e in [x for x in res["results"] if x != "majority"]:
        i = paper_eps_index.get(e)
        row = [f"{e:g}"]
        for mi, mm in enumerate(MECHANISMS):
            for j in range(k):
                ours = res["results"][e][mm]["acc"][j]
                p = _paper_cells(key, i, mi, "acc")
                row.append(_fmt_pct(ours) + (f" ({p[j]:.1f}%)" if p is not None else ""))
        lines.append("| " + " | ".join(row) + " |")
    maj = res["results"]["majority"]
    lines += ["", "Majority baseline (the training period's top-" + str(k) + " as the prediction): Acc@1..K = "
              + ", ".join(_fmt_pct(100 * a) for a in maj["acc"]) + f", HR {100 * maj['hr']:.1f}%, "
              f"NDCG {maj['ndcg']:.3f}, L1 {maj['l1']:.1f}.", ""]
    # rank table
    head = "| $\\epsilon$ | " + " | ".join(f"{mm} {x}" for mm in MECHANISMS for x in ("HR", "NDCG", "L1")) + " |"
    lines += [f"HR@{k} (%), NDCG@{k} and L1 count error, ours (paper).", "", head,
              "|" + " --- |" * (1 + 3 * len(MECHANISMS))]
    for e in [x for x in res["results"] if x != "majority"]:
        i = paper_eps_index.get(e)
        row = [f"{e:g}"]
        for mi, mm in enumerate(MECHANISMS):
            r = res["results"][e][mm]
            p = _paper_cells(key, i, mi, "rank")
            if p:
                p_hr, p_ndcg, p_l1 = p
            row.append(_fmt_pct(r["hr"]) + (f" ({p_hr:g}%)" if p else ""))
            row.append(f"{r['ndcg']:.3f}" + (f" ({p_ndcg:.3f})" if p else ""))
            row.append(f"{r['l1']:.1f}" + (f" ({p_l1:g})" if p else ""))
        lines.append("| " + " | ".join(row) + " |")
        # the paper's claim: Ours-Exp best on every metric
        r = res["results"][e]
        for metric, better in (("hr", max), ("ndcg", max), ("l1", min)):
            vals = {mm: r[mm][metric] for mm in MECHANISMS}
            best = better(vals, key=vals.__getitem__)
            if best != "Ours-Exp" and abs(vals[best] - vals["Ours-Exp"]) > 1e-9:
                se = math.hypot(r[best]["se_" + metric], r["Ours-Exp"]["se_" + metric])
                same = pts[e].b >= T and best == "GroupDP-Exp"
                why = (" -- the same mechanism here (Ours-Exp uses the trivial curve point), so this is Monte Carlo "
                       "noise" if same else (" -- within 2 standard errors of the simulation, i.e. a tie"
                                            if abs(vals[best] - vals["Ours-Exp"]) <= 2 * se else
                                            " -- a real difference on this data"))
                if same:
                    disagreements.append(_Disagreement("same", f"{name} top-{k}",
                                                       f"$\\epsilon = {e:g}$ {metric.upper()}"))
                else:
                    disagreements.append(_Disagreement("cell", f"{name} top-{k}",
                                                       f"{name} top-{k}, $\\epsilon = {e:g}$: {best} beats "
                                                       f"Ours-Exp on {metric.upper()} "
                                                       f"({vals[best]:.3g} vs {vals['Ours-Exp']:.3g}, "
                                                       f"s.e. of the difference "
                                                       f"{se:.2g}){why}; the paper has Ours-Exp best everywhere."))
    lines.append("")
    return lines, disagreements


def _plot(all_res, path: pathlib.Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(all_res)
    ncols = min(n, 3)
    nblocks = -(-n // ncols)
    fig, axes = plt.subplots(2 * nblocks, ncols, figsize=(4.6 * ncols, 3.5 * 2 * nblocks), squeeze=False)
    colors = {"Ours-Exp": "C0", "MQM": "C1", "GroupDP-Exp": "C2", "GroupDP-Lap": "C3"}
    for idx, res in enumerate(all_res):
        col, block = idx % ncols, idx // ncols
        key = PAPER_KEY.get((res["name"], res["k"]))
        eps = [e for e in res["results"] if e != "majority"]
        for row, (metric, label) in enumerate((("acc", "Acc@1 (%)"), ("ndcg", f"NDCG@{res['k']}"))):
            ax = axes[2 * block + row][col]
            for mi, mm in enumerate(MECHANISMS):
                ys = [res["results"][e][mm][metric][0] if metric == "acc" else res["results"][e][mm][metric]
                      for e in eps]
                ax.plot(eps, ys, "o-", color=colors[mm], label=f"{mm} (ours)")
                if key is not None:
                    pe = [e for e in eps if e in EPSILONS]
                    pv = [PAPER_ACC[key][EPSILONS.index(e)][mi][0] if metric == "acc"
                          else PAPER_RANK[key][EPSILONS.index(e)][mi][1] for e in pe]
                    ax.plot(pe, pv, "--", color=colors[mm], alpha=0.6, label=f"{mm} (paper)")
            ax.set_xlabel("epsilon_puffer")
            ax.set_ylabel(label)
            ax.set_title(f"{res['name']}, top-{res['k']}"
                         + (f"\npaper: {PAPER_TABLES[key].split(' (')[0]}" if key else ""),
                         fontsize=9)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str:
    """Run the experiment, write ``bai_topk.png`` into ``out_dir`` and return the Markdown section."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    epsilons = (1.0, 5.0) if quick else EPSILONS
    trials = 2 if quick else 500
    configs = [("seattle-weather", 3), ("seattle-wind", 3), ("seattle-temps", 3),
               ("seattle-weather", 5), ("seattle-wind", 5), ("seattle-temps", 5)]
    if quick:
        configs = [("seattle-weather", 3), ("seattle-temps", 3)]
    n_groups = {"seattle-weather": 8, "seattle-wind": 8, "seattle-temps": 13}
    total = sum(n_groups[n] for n, _ in configs) * len(epsilons)
    done = [0]

    def tick():
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    t0 = time.perf_counter()
    all_res = [run_dataset(n, k, epsilons=epsilons, trials=trials, progress=progress, tick=tick, seed=s)
               for s, (n, k) in enumerate(configs)]
    elapsed = time.perf_counter() - t0
    _plot(all_res, out_dir / "bai_topk.png")
    eidx = {e: EPSILONS.index(e) for e in epsilons}
    lines = [f"## {TITLE}", "",
             "Bai, He, Gu, Kifer and Maeng, section 7 and appendix D.  The paper's data (Foursquare check-ins, "
             "Capture24 activities) are not shipped by any installable package, so the same query is asked of the "
             "real categorical sequences that are: the top-K categories within each group of a held-out test "
             "period, with the prior (a first-order chain, appendix D.2 smoothing $\\tau = 10^{-5}$, stationary start) "
             "fitted on a training period (section 7.1.4).  As in the paper, a group's database is the set of its "
             "individuals' sequences, independent chains under the prior (the paper's users and participants; "
             "here months or days, an assumption of the prior), so a secret about one entry correlates only within "
             "its own chain and the chain's $a(b)$ curve and MQM calibration hold for the whole group.  "
             "The paper's values are in parentheses for orientation "
             "only: different data, different numbers of categories and groups, so only the *ordering* of the "
             "mechanisms is comparable.",
             "",
             "Mechanisms: Ours-Exp = `PufferfishTopK` ($K$ exponential draws at $\\epsilon_{\\mathrm{DP}} / K$, "
             "$\\epsilon_{\\mathrm{DP}}$ from the "
             "$a(b)$ curve of the fitted chain, Theorem 6, best point); MQM = `MQMExact` Laplace noise on each of the "
             "$m$ counts at $\\epsilon / m$ (1-Lipschitz), sorted; GroupDP-Exp = the same top-K at $\\epsilon / T$; "
             "GroupDP-Lap = Laplace counts at scale $m T / \\epsilon$, sorted.  The group of group DP is one test "
             "individual's sequence ($T$ entries: individuals are independent chains); the paper's Group DP treats "
             "*all* "
             "data points as one group, which explains part of its much lower GroupDP numbers.  "
             "Metrics as in section 7.1.5, ties in the true counts in the "
             "prediction's favour; trial noise from seeded numpy generators (a simulation: such releases are "
             "marked `secure=False`).",
             "",
             "![noisy top-K](results/bai_topk.png)", ""]
    disagreements = []
    for res in all_res:
        sec, dis = _section(res, eidx)
        lines += sec
        disagreements += dis
    lines += ["### Agreement with the paper", ""]
    cells = [d for d in disagreements if d.kind == "cell"]
    same: dict[Any, list] = {}
    for d in disagreements:
        if d.kind == "same":
            same.setdefault(d.where, []).append(d.text)
    n_dis = len(cells) + sum(len(v) for v in same.values())
    lines.append("* The paper's headline claim (Ours-Exp is best on every metric at every $\\epsilon$) is checked "
                 "row by "
                 "row on HR, NDCG and L1 above; " + (f"another mechanism comes out ahead in {n_dis} (data set, K, "
                                                     "$\\epsilon$, metric) cells:" if n_dis else
                                                     "it holds in every row of our runs."))
    for where, items in same.items():
        lines.append(f"  * {where}: GroupDP-Exp ahead of Ours-Exp in {len(items)} cells ({', '.join(items)}). "
                     "Both are the same mechanism on this data (Ours-Exp falls back to the trivial curve point), "
                     "so these are Monte Carlo noise, not a disagreement.")
    lines += [f"  * {d.text}" for d in cells]
    real = [d for d in cells if "a real difference" in d.text]
    if real:
        winners = sorted({d.text.split(": ", 1)[1].split(" beats")[0] for d in real})
        lines.append(f"* The {len(real)} real differences (beyond 2 standard errors) have {' and '.join(winners)} "
                     "ahead of Ours-Exp, mostly on NDCG and L1, i.e. on recovering the *whole* order and its counts. "
                     "A plausible reading: with few categories the Laplace counts split $\\epsilon$ over $m = 5$ or 11 "
                     "counts cheaply, while Ours-Exp spends $\\epsilon_{\\mathrm{DP}} / K$ per draw and "
                     "$\\epsilon_{\\mathrm{DP}}$ pays the curve's "
                     "$a(b)$ and $b$; on the paper's 78 labels and large groups the exponential mechanism wins, on our "
                     "small groups it does not always.")
    lines.append("* Absolute values differ from the paper's everywhere: our groups hold 84 or 168 entries from 5 or 11 "
                 "categories (the paper's countries hold thousands of check-ins over 78 labels), so counts, L1 "
                 "errors and the accuracy of uninformed guessing are on other scales.  Our GroupDP columns are much "
                 "closer to Ours-Exp than the paper's because our group is one individual's sequence ($T = 24$ or 28 "
                 "entries; individuals are independent chains, so that is the group privacy needs), not every "
                 "data point.")
    for res in all_res:
        eps_hi = max(e for e in res["results"] if e != "majority")
        r = res["results"][eps_hi]
        key = PAPER_KEY.get((res["name"], res["k"]))
        others = {mm: r[mm]["acc"][0] for mm in MECHANISMS if mm != "Ours-Exp"}
        best = max(others, key=others.__getitem__)
        paper = ""
        if key is not None and eps_hi in EPSILONS:
            row = PAPER_ACC[key][EPSILONS.index(eps_hi)]
            paper = (f" (paper {PAPER_TABLES[key].split(' (')[0]}: Ours-Exp {row[0][0]:.1f}%, "
                     f"{best} {row[MECHANISMS.index(best)][0]:.1f}%)")
        if res["points"][eps_hi].b >= res["T"]:
            verdict = ("Ours-Exp uses the trivial curve point (it is GroupDP-Exp on this data): "
                       "the curve brings no gain here")
        elif r["Ours-Exp"]["acc"][0] > others[best]:
            verdict = "Ours-Exp ahead, as in the paper"
        else:
            verdict = "Ours-Exp not ahead, unlike the paper"
        lines.append(f"* Headline, {res['name']} top-{res['k']} at $\\epsilon = {eps_hi:g}$: Ours-Exp Acc@1 "
                     f"{r['Ours-Exp']['acc'][0]:.1f}%, NDCG {r['Ours-Exp']['ndcg']:.3f}; best other {best} "
                     f"{others[best]:.1f}%, NDCG {r[best]['ndcg']:.3f}{paper}: {verdict}.")
    lines.append(f"* Run time of this section: {elapsed:.1f} s ({'quick mode' if quick else 'full'}).")
    lines.append("")
    return "\n".join(lines)
