"""Temporal privacy leakage of a location stream: how much do per-step DP releases leak about X_t?

A user's state (here: home / work / elsewhere) follows a Markov chain the attacker knows.  Every
step releases an epsilon-DP statistic of the current state.  Cao et al. (ICDE 2017) show the
leakage about X_t accumulates over the other steps: TPL_t = BPL_t + FPL_t - epsilon.  We

1. compute BPL, FPL and TPL for a constant budget, and the supremum as the stream grows;
2. find the largest per-step budget keeping every TPL_t below a target, and the schedule
   with larger budgets at the two ends;
3. show a chain whose leakage has no supremum (two states that never lead to the same place);
4. compare with the a(b)-influence curve (Bai et al., Theorem 6) and MQM (Song et al.).

Run: ``python examples/temporal_leakage.py`` (a few seconds).
"""

import puffgm
from puffgm.chains import ChainPriorClass
from puffgm.chains.leakage import allocate_budget, leakage_supremum, temporal_leakage
from puffgm.experiments.temporal_leakage import mqm_view

P = [[0.80, 0.15, 0.05],   # home -> home, work, elsewhere
     [0.20, 0.70, 0.10],   # work -> ...
     [0.40, 0.20, 0.40]]   # elsewhere -> ...
chain = ChainPriorClass.from_matrices(P, initial="stationary", length=48, states=["home", "work", "elsewhere"])

# 1. leakage of epsilon = 0.2 at every step (P^B: the time reversal of the stationary chain)
leak = temporal_leakage(chain, epsilon=0.2)
print(leak.explain(max_rows=8))

# 2. budgets for a target alpha = 1 over the 48 steps
for scheme in ("constant", "ends"):
    print()
    print(allocate_budget(chain, epsilon=1.0, scheme=scheme).explain())

# 3. a chain with a supremum only for small budgets: row 'a' puts mass 0.5 on the state 'b' excludes
cycle = ChainPriorClass.from_matrices([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]], length=10,
                                      states=["a", "b", "c"])
for eps in (0.5, 0.8):
    print()
    print(leakage_supremum(cycle, epsilon=eps).explain().split("\ncondition")[0])

# 4. the same release through the a(b) curve and MQM: epsilon_puffer reached by epsilon = 0.2 per step
curve_eps = puffgm.translate(chain, epsilon_dp=0.2, max_b=23).epsilon_puffer
mqm_eps = mqm_view(chain, epsilon_step=0.2, rtol=1e-4)  # smallest epsilon with MQM's scale <= 1/0.2
print(f"\nPufferfish parameter of 48 releases at epsilon 0.2: TPL {leak.max_tpl:.3f}, "
      f"a(b) curve {curve_eps:.3f}, MQM {mqm_eps:.3f}, group DP {48 * 0.2:.1f}")
