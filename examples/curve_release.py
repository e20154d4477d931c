"""Curves, translation and composable releases (Bai, He, Gu, Kifer and Maeng, sections 6-7).

A user derives the a(b)-influence curve of a bundled network (and of a long
Markov chain), plots it, translates a Pufferfish budget into epsilon_DP, and
releases a Laplace count and a noisy top-3 with an accountant that reports the
composed guarantee (Theorem 7).  Runs offline in a few seconds.

    /tmp/venv/bin/python examples/curve_release.py [--plot curves.png]
"""

import argparse

import numpy as np

from puffgm.accounting import PrivacyAccountant
from puffgm.api import influence_curve
from puffgm.chains.priors import ChainPriorClass
from puffgm.mechanisms.pufferfish import PufferfishLaplace, PufferfishTopK
from puffgm.mechanisms.translation import dp_epsilon, puffer_epsilon

ap = argparse.ArgumentParser()
ap.add_argument("--plot", default=None, help="save the curves to this PNG (needs puffgm[plot])")
args = ap.parse_args()

# 1. the curve of a bundled network, and of a 5-state sticky chain of a million steps
net = influence_curve("example:child")
print(net.explain(max_rows=10), "\n")
P = np.full((5, 5), 0.05) + np.eye(5) * 0.75
chain = influence_curve(ChainPriorClass.from_matrices(P, "stationary", 1_000_000), max_b=40)
print(f"chain of 10^6 steps: a(1) = {chain.a[0]:.4g}, a(10) = {chain.a[9]:.4g}, a(40) = {chain.a[39]:.3g}\n")
if args.plot:
    from puffgm.cli.curve import plot_curves

    plot_curves([("example:child", net), ("5-state chain, T = 10^6", chain)], args.plot)
    print(f"plot saved to {args.plot}\n")

# 2. translate a budget (Theorem 6) both ways
print("child network:", dp_epsilon(net, epsilon=2.0).explain(), "\n")
t = dp_epsilon(chain, epsilon=2.0)
print("chain:", t.explain(), "\n")
print("chain:", puffer_epsilon(chain, epsilon_dp=t.epsilon_dp).explain(), "\n")

# 3. releases on the chain data (a million time steps over 5 activities), with an explicit accountant.
#    Changing one time step moves one count by 1 (Laplace, L = 1) and every utility by <= 1.
counts = np.array([412_000.0, 391_500.0, 88_000.0, 60_250.0, 48_250.0])  # occupation counts of the 5 states
acc = PrivacyAccountant(budget=5.0)
lap = PufferfishLaplace(chain, epsilon=2.0, lipschitz=1.0).release(counts[2], accountant=acc, label="count")
top = PufferfishTopK(chain, epsilon=2.0, k=3, sensitivity=1.0).release(
    counts, candidates=[f"activity {i}" for i in range(5)], accountant=acc, label="top-3")
print(f"noisy count {lap.value:.2f} (true {counts[2]:.0f}); secure noise: {lap.secure}")
print(f"noisy top-3 {list(top.value)} (true order {[int(i) for i in np.argsort(-counts)[:3]]})")
print(acc.report().explain())
for e in acc.report().entries:
    print(f"  {e.label}: epsilon_puffer {e.epsilon:g} at curve point a={e.a:.4g}, b={e.b} (epsilon_DP "
          f"{e.epsilon_dp:.4g})")
try:
    PufferfishLaplace(chain, epsilon=3.0).release(counts[1], accountant=acc)
except Exception as exc:  # BudgetError: nothing released
    print(f"third release refused: {exc}")
