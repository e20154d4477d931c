"""How far from optimal is a Markov Quilt Mechanism calibration?  A certified answer.

Calibrates ALARM (37 nodes, every node protected, epsilon = 1) twice: with the structured quilt
search alone (search_budget=0, which still reports the cheap single-node lower bound), and with the
default branch and bound over far sets, which certifies that no choice of Markov quilts can give
less noise.  See docs/foundation.md, "Optimality".

Run: python3 examples/quilt_gap.py
"""

import puffgm


def main():
    prior = puffgm.load_prior_class("example:alarm")
    for budget in (0, 300):
        res = puffgm.calibrate(prior, epsilon=1.0, search_budget=budget)
        print(f"search_budget={budget}: sigma_max {res.sigma_max:.4f}, "
              f"lower bound {res.sigma_lower_bound:.4f}, optimality gap {100 * res.optimality_gap:.2f}%")
    print(res.explain())


if __name__ == "__main__":
    main()
