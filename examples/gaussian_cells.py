"""Certified leakage of a squared-exponential Gaussian prior in the pinned regime (the cell engine).

Figure 2b's kernel Sigma_jk = exp(-(j - k)^2 / l) has a precision with a checkerboard sign pattern, so the
monotone engine of Markov chains does not apply, and with the neighbours of the secret pinned at the box
the Bonferroni bound is infinite.  The cell engine (puffgm.gaussian.multivariate, docs/gaussian.md)
bounds the sup over x_L by branch and bound over cells of the natural parameters, with a second-order
vertex bound per cell; ``cell_budget`` caps the cells (any budget gives a certified value; a larger one a
tighter value).  A certified lower bound brackets the exact value.  A long run can go in pieces:
``cell_checkpoint_dir`` keeps the branch and bound on disk and the next call resumes it (a first piece
stopped by ``cell_target`` as soon as the certified value is at most 100, then a piece up to 16 cells in
all, give the bits of 16 cells at once).

    python examples/gaussian_cells.py    # about 3 minutes (2-core machine, shared)

Measured (2-core machine, shared with two other jobs): budget 0 (the cell engine off) 30993.5; 16 cells
55.29 (32.7 s; with the Bonferroni sandwich of stop 22, on by default; 57.12 in 97.4 s without it,
``cell_bonferroni=False``, the same run; 96.12 before the point symmetry halved the cell space); certified
lower bound 35.91; Theorem 9 (not a bound) 39.12.  In pieces through a checkpoint: 81.96 after the first
piece (the target 100 reached after 7 cells), then 55.29 after 15 cells in all, the same bits as the
16-cell run.
"""

import os
import tempfile
import time

from puffgm.gaussian.closed_forms import gp_covariance
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions

n, ell = 6, 5.0
cov = gp_covariance(n, ell)
i, L = 2, [0, 5]                       # H = {1, 2, 3, 4}: b = 4
for budget in (0, 16):
    t0 = time.perf_counter()
    res = GaussianRegionModel(cov, -5.0, 5.0, 0.1, options=ModelOptions(cell_budget=budget)).leakage(i, L)
    d = res.details
    print(f"cell_budget = {budget:3d}: a(L) = {res.value:.6g}  (Bonferroni {d['bonferroni']:.4g}, "
          f"monotone {d['monotone']:.4g}, cell engine {d['cells']:.6g}, certified lower bound "
          f"{d['bivariate_lower']:.6g}; Theorem 9 {res.theorem9:.4g}; {time.perf_counter() - t0:.1f} s)")

# the same 16 cells without the Bonferroni sandwich (the engine before stop 22): sub-box bounds alone
t0 = time.perf_counter()
old = GaussianRegionModel(cov, -5.0, 5.0, 0.1,
                          options=ModelOptions(cell_budget=16, cell_bonferroni=False)).leakage(i, L)
print(f"cell_budget =  16 without the Bonferroni sandwich: cell engine {old.details['cells']:.6g} "
      f"({time.perf_counter() - t0:.1f} s)")

# the same 16 cells in two pieces through a checkpoint (a later process could run the second piece); the
# first stops as soon as the certified value is at most 100
with tempfile.TemporaryDirectory() as ckdir:
    for target in (100.0, None):
        part = GaussianRegionModel(cov, -5.0, 5.0, 0.1,
                                   options=ModelOptions(cell_budget=16, cell_target=target,
                                                        cell_checkpoint_dir=ckdir)).leakage(i, L)
        eng = part.details["cell_engine"]
        print(f"in pieces, cell_target = {target}: cell engine {part.details['cells']:.6g} after "
              f"{eng['cells']} cells in all, stopped by {eng['stopped']!r} ({eng['seconds']:.1f} s in all), "
              f"checkpoint {os.path.basename(eng['checkpoint'])}")
    print("same bits as 16 cells at once:", part.details["cells"] == res.details["cells"])
