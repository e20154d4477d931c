"""``puffgm translate``: the Pufferfish epsilon <-> epsilon_DP along the a(b)-influence curve (Bai et al. Theorem 6).

``--epsilon E`` (``--epsilon-puffer`` is its deprecated spelling) prints the largest
epsilon_DP such that every per-entry epsilon_DP-DP mechanism is E-Pufferfish (max over curve points of (E - a)/b), and
the point used; ``--epsilon-dp E`` prints the best Pufferfish guarantee of an
E-DP mechanism (min over b of b E + a(b)).  PRIOR arguments as for ``puffgm curve``
and ``puffgm calibrate``: several PRIORs form one prior class Theta and give one
translation along the class curve; ``--each`` translates along each PRIOR's own
curve instead (``--theta`` is an accepted, ignored alias of the default).
"""

from __future__ import annotations

import json

from puffgm.cli.arguments import add_renamed_flag, number
from puffgm.cli.curve import add_prior_arguments, compute_curves

__all__ = ["register", "run"]


def register(p) -> None:
    add_prior_arguments(p)
    g = p.add_mutually_exclusive_group(required=True)
    add_renamed_flag(g, "--epsilon", "--epsilon-puffer", type=number, default=None,
                     help="Pufferfish guarantee to translate to epsilon_DP (--epsilon-puffer: deprecated spelling)")
    g.add_argument("--epsilon-dp", type=number, default=None,
                   help="DP parameter to translate to the Pufferfish epsilon")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> str:
    from puffgm.core.validation import check_positive_finite
    from puffgm.mechanisms.translation import dp_epsilon, puffer_epsilon

    if args.epsilon is not None:
        eps = check_positive_finite(args.epsilon, "epsilon", "puffgm translate")
    else:
        eps = check_positive_finite(args.epsilon_dp, "epsilon-dp", "puffgm translate")
    out = []
    for label, curve in compute_curves(args):
        t = (dp_epsilon(curve, epsilon=eps) if args.epsilon is not None
             else puffer_epsilon(curve, epsilon_dp=eps))
        out.append((label, t))
    if args.json:
        if len(out) == 1:
            priors = [out[0][0]] if args.each else list(args.priors)
            return json.dumps(dict(out[0][1].to_dict(), prior=out[0][0], priors=priors), allow_nan=False)
        return json.dumps({"translations": [dict(t.to_dict(), prior=label, priors=[label]) for label, t in out]},
                          allow_nan=False)
    return "\n\n".join(f"{label}:\n{t.explain()}" for label, t in out)
