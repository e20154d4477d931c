"""Calibrate over an infinite class of binary chains (Song et al., section 5.2) with certified suprema.

Theta = every chain with p0 = P(0 -> 0) and p1 = P(1 -> 1) in [0.3, 0.7] and every initial
distribution.  GroupDP, GK16, MQMApprox and MQMExact each return a noise scale proven to be at
least the supremum over the box; MQMExact reports its certified bracket.  Then the frequency of
state 1 of one chain drawn from the box is released with OpenDP's secure Laplace sampler.

Run: python examples/chain_box.py
"""

import numpy as np

from puffgm.chains import ChainParameterBox, MQMApprox, MQMExact, gk16, group_dp
from puffgm.mechanisms.laplace import release_laplace


def main(alpha=0.3, epsilon=1.0, T=100):
    box = ChainParameterBox(p0=(alpha, 1 - alpha), p1=(alpha, 1 - alpha), initial="any", length=T)
    exact = MQMExact(box).calibrate(epsilon=epsilon, lipschitz=1.0 / T)
    for name, res in [("GroupDP", group_dp(box, epsilon=epsilon, lipschitz=1.0 / T)),
                      ("GK16", gk16(box, epsilon=epsilon, lipschitz=1.0 / T)),
                      ("MQMApprox", MQMApprox(box).calibrate(epsilon=epsilon, lipschitz=1.0 / T)), ("MQMExact", exact)]:
        print(f"{name:10s} sigma_max {res.sigma_max:10.5g}  applicable {res.applicable}")
    d = exact.details
    print(f"MQMExact certificate: sup over the box in [{d['lower_bound']:.6g}, {exact.sigma_max:.6g}], "
          f"worst chain (p0, p1) = {d['worst_point']}, {d['evaluations']} exact evaluations")
    rng = np.random.default_rng(1)  # only to draw an example chain; the release below uses secure noise
    p0, p1 = rng.uniform(alpha, 1 - alpha, 2)
    x = [int(rng.uniform() < 0.5)]
    for _ in range(T - 1):
        stay = p0 if x[-1] == 0 else p1
        x.append(x[-1] if rng.uniform() < stay else 1 - x[-1])
    rel = release_laplace(float(np.mean(x)), exact)
    print(f"frequency of state 1: true {np.mean(x):.3f}, released {float(rel.value):.3f} (secure={rel.secure})")


if __name__ == "__main__":
    main()
