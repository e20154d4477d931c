"""Bai et al. Theorems 4-5: which mechanisms can compose?  Collapse cases fail, DP-based ones pass."""

import numpy as np

from puffgm.framework import Instantiation, Secret
from puffgm.framework.cautionary import bai_example_4_1, bai_example_4_2, bai_example_4_3
from puffgm.framework.composition_conditions import check_composition_conditions, repeated_release_loss

for case in (bai_example_4_1(), bai_example_4_2(3), bai_example_4_3()):
    r = check_composition_conditions(case.inst, case.mechanism)
    print(r.explain(), end="\n\n")

# Example 4.3 mixed with 10% uniform output: finite everywhere, still not composable
case = bai_example_4_3()
tab = 0.9 * np.exp(case.mechanism.log_table(case.inst)) + 0.1 / 4
r = check_composition_conditions(case.inst, tab)
print(f"softened 4.3: single-run epsilon {r.epsilon:.4f}, NfC value {r.nfc_value:.4f}, holds {r.holds}")
alpha = np.zeros(4)
for o, a in r.worst.alpha:
    alpha[o] = a
counts = np.round(400 * (0.999 * alpha + 0.00025))
t = case.inst.prior_names.index(r.worst.prior)
loss = repeated_release_loss(case.inst, tab, counts, prior=t, pair=0)
print(f"{int(counts.sum())} runs: loss {loss:.2f} > {counts.sum() * r.epsilon:.2f} = runs x epsilon")

# randomised response (log 3-DP) passes with DP-style constraints
inst = Instantiation([np.array([0.5, 0.5])], [(Secret.value("X", 0), Secret.value("X", 1))], nodes=["X"], states=[2])
print(check_composition_conditions(inst, np.array([[0.75, 0.25], [0.25, 0.75]])).explain())
