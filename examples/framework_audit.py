"""Exact Pufferfish audits: DP on independent records vs the same Laplace noise on a correlated chain."""

import numpy as np

from puffgm.framework import Instantiation, audit_composition, audit_finite, audit_laplace

# three binary records; independent prior vs a sticky chain (P(stay) = 0.9)
indep = np.full((2, 2, 2), 1 / 8)
chain = np.zeros((2, 2, 2))
for x in np.ndindex(2, 2, 2):
    chain[x] = 0.5 * (0.9 if x[1] == x[0] else 0.1) * (0.9 if x[2] == x[1] else 0.1)

for name, joint in (("independent", indep), ("chain", chain)):
    inst = Instantiation.bayesian_network_default([joint], nodes=["X1", "X2", "X3"], states=[2, 2, 2])
    r = audit_laplace(inst, lambda a: sum(a.values()), scale=1.0)
    print(f"{name:12s} Laplace(1) on the sum: exact loss {r.loss:.6f}, witness {r.witness}")

# randomised response on X1 (keep 3/4), one and three runs
inst = Instantiation.bayesian_network_default([chain], nodes=["X1", "X2", "X3"], states=[2, 2, 2], protected=["X1"])
rr = np.zeros((2, 2, 2, 2))
for x in np.ndindex(2, 2, 2):
    rr[x] = [0.75, 0.25] if x[0] == 0 else [0.25, 0.75]
print("randomised response on X1: one run", round(audit_finite(inst, rr).loss, 6),
      "three runs", round(audit_composition(inst, rr, k=3).loss, 6), "(3 log 3 =", round(3 * np.log(3), 6), ")")
