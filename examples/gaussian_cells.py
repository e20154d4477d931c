"""Certified leakage of a squared-exponential Gaussian prior in the pinned regime (the cell engine).

Figure 2b's kernel Sigma_jk = exp(-(j - k)^2 / l) has a precision with a checkerboard sign pattern, so the
monotone engine of Markov chains does not apply, and with the neighbours of the secret pinned at the box
the Bonferroni bound is infinite.  The cell engine (puffgm.gaussian.multivariate, docs/gaussian.md)
bounds the sup over x_L by branch and bound over cells of the natural parameters, with a second-order
vertex bound per cell; ``cell_budget`` caps the cells (any budget gives a certified value; a larger one a
tighter value).  A certified lower bound brackets the exact value.

    python examples/gaussian_cells.py    # about 3 minutes (2-core machine, shared)

Measured (2-core machine, shared with three other jobs): budget 0 (the cell engine off) 30993.5; 16 cells
57.12 (272 s; 96.12 before the point symmetry halved the cell space, 53.64 after 40 cells then); certified
lower bound 35.91; Theorem 9 (not a bound) 39.12.
"""

import time

from puffgm.closed_forms import gp_covariance
from puffgm.gaussian.leakage import GaussianRegionModel

n, l = 6, 5.0
cov = gp_covariance(n, l)
i, L = 2, [0, 5]                       # H = {1, 2, 3, 4}: b = 4
for budget in (0, 16):
    t0 = time.perf_counter()
    res = GaussianRegionModel(cov, -5.0, 5.0, 0.1, cell_budget=budget).leakage(i, L)
    d = res.details
    print(f"cell_budget = {budget:3d}: a(L) = {res.value:.6g}  (Bonferroni {d['bonferroni']:.4g}, "
          f"monotone {d['monotone']:.4g}, cell engine {d['cells']:.6g}, certified lower bound "
          f"{d['bivariate_lower']:.6g}; Theorem 9 {res.theorem9:.4g}; {time.perf_counter() - t0:.1f} s)")
