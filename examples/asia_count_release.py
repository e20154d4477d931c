"""Calibrate the Markov Quilt Mechanism on the bundled `asia` network and release a count.

As in Song et al. section 4, the database *is* the network's variables,
X = (asia, tub, smoke, ...), and the value of each node is a secret.  The query counts the variables in state "yes"
(1-Lipschitz in L1: changing one
variable changes the count by at most 1).

Run:  python3 examples/asia_count_release.py
"""

import puffgm
from puffgm.accounting import PrivacyAccountant

net = "example:asia"
database = {"asia": "no", "tub": "no", "smoke": "yes", "lung": "no",
            "bronc": "yes", "either": "no", "xray": "no", "dysp": "yes"}
count = float(sum(v == "yes" for v in database.values()))

for eps in (1.0, 4.0):
    cal = puffgm.calibrate(net, epsilon=eps, lipschitz=1.0)
    print(f"--- epsilon = {eps}")
    print(cal.explain())

cal = puffgm.calibrate(net, epsilon=4.0)
acc = PrivacyAccountant(budget=8.0)
# MQM covers every 1-Lipschitz query, so the answer is given, named as such
first = puffgm.release(cal, answer=count, accountant=acc)          # secure OpenDP noise (default)
second = puffgm.release(cal, answer=count, accountant=acc)
print(f"\ntrue count {count:g}; releases {first.value:.3f} and {second.value:.3f}")
print(first.explain())
print(acc.report())
try:
    puffgm.release(cal, answer=count, accountant=acc)
except Exception as exc:  # BudgetError: nothing released
    print(f"third release refused: {exc}")
