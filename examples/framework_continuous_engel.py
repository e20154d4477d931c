"""Continuous and aggregate secrets (Kifer-Machanavajjhala section 7) on real incomes.

Data: the Engel food-expenditure data set (235 Belgian working-class households, 1857),
shipped inside the statsmodels wheel (no download). Install statsmodels for this example
(`pip install statsmodels`, part of the `examples` extra).
"""

import csv
import math
import os

import numpy as np

from puffgm.framework.continuous import (
    audit_absolute_error_sum,
    release_aggregate_sum,
    release_relative_error,
    release_sum_absolute_error,
)

try:
    import statsmodels.datasets.engel as engel
except ImportError as exc:  # pragma: no cover
    raise SystemExit("This example needs statsmodels (it ships the Engel data): pip install statsmodels") from exc

with open(os.path.join(os.path.dirname(engel.__file__), "engel.csv"), newline="") as fh:
    income = np.array([float(row["income"]) for row in csv.DictReader(fh)])
n = income.size
print(f"Engel incomes: n = {n}, mean {income.mean():.2f}, max {income.max():.2f}")

eps, seed = 1.0, 2024
# 7.1.1: nobody's income to within +-100 francs; DP would need a bound on incomes
r = release_sum_absolute_error(income, k=100.0, epsilon=eps, random_state=seed)
print(f"sum, absolute error k=100: noisy mean {r.value / n:.2f} (true {income.mean():.2f}), scale {r.scale:g}")
# 7.1.2: nobody's income to within a factor 0.9 (about 10%)
r = release_relative_error(income, c=0.9, epsilon=eps, random_state=seed)
geo = np.exp(np.log(income).mean())
print(f"geometric mean, relative error c=0.9: {r.value:.2f} (true {geo:.2f}), log-scale {r.scale:.4f}")
# 7.2: the total to within sqrt(n) standard deviations (sampling error)
delta = math.sqrt(n) * income.std()
r = release_aggregate_sum(income, delta=delta, epsilon=eps, random_state=seed)
print(f"aggregate secret delta={delta:.1f}: noisy total {r.value:.1f} (true {income.sum():.1f}), scale {r.scale:.1f}")
a = audit_absolute_error_sum(k=1.0, epsilon=eps, step=0.25)
print(f"exact audit of Lemma 7.1 on a grid: loss {a['loss']:.4f} <= epsilon {eps} (tight value "
      f"{a['expected_worst']:.4f})")
print("(seeded noise: reproducible, not for production)")
