"""``puffgm leakage``: temporal privacy leakage of per-step DP releases on a Markov chain (Cao et al.).

``puffgm leakage CHAIN.json --epsilon E [--length T] [--json]`` computes BPL_t, FPL_t and
TPL_t for the budget E at every step (Cao, Yoshikawa, Xiao and Xiong, ICDE 2017;
:mod:`puffgm.chains.leakage`), the largest TPL and its supremum as T grows;
``--epsilons e1,e2,...`` gives one budget per step instead; ``--target ALPHA`` finds the
largest constant budget whose largest TPL is at most ALPHA (``"epsilon_step"``) and the
schedule with larger budgets at the two ends (``"ends"``).  T defaults to the spec's
``"length"`` (or the number of budgets).  CHAIN.json is a chain spec as ``puffgm
calibrate`` reads it, with an optional ``"backward"`` matrix (else the time reversal of
the stationary chain is used); a class of several transition matrices gives the maximum
over its members; parameter boxes are refused.

``--json`` prints one object: ``bpl``, ``fpl``, ``tpl`` (lists over t = 1..T),
``max_tpl``, ``argmax_t``, ``sup_tpl`` (``null`` when infinite or for per-step budgets,
with ``sup_tpl_reason``), ``supremum``, ``epsilon`` or ``epsilons``, ``members``; with
``--target`` also ``target``, ``epsilon_step`` and ``ends``.
"""

from __future__ import annotations

import json

from puffgm.cli.arguments import integer, number, number_list

__all__ = ["register", "run"]


def register(p) -> None:
    p.add_argument("chain", metavar="CHAIN.json",
                   help="chain JSON spec (as for calibrate), with an optional 'backward' matrix")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--epsilon", type=number, default=None, help="the per-step budget, the same at every step")
    g.add_argument("--epsilons", type=number_list, default=None, metavar="E1,E2,...",
                   help="one per-step budget per step (comma-separated)")
    g.add_argument("--target", type=number, default=None, metavar="ALPHA",
                   help="find the largest constant per-step budget with max TPL <= ALPHA")
    p.add_argument("--length", type=integer, default=None, metavar="T",
                   help="number of steps T (default: the spec's length, or the number of budgets)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _ends(chain, alpha, length):
    """The ``"ends"`` allocation as a dict, or the reason it does not apply."""
    from puffgm.chains.leakage import allocate_budget
    from puffgm.exceptions import NotApplicableError, first_line

    try:
        a = allocate_budget(chain, epsilon=alpha, length=length, scheme="ends")
    except NotApplicableError as exc:
        return None, {"applicable": False, "reason": first_line(exc)}
    return a, {"applicable": True, "epsilon_first": a.epsilon_first, "epsilon_middle": a.epsilon_step,
               "epsilon_last": a.epsilon_last, "max_tpl": a.leakage.max_tpl}


def run(args) -> str:
    from puffgm.chains.leakage import allocate_budget, temporal_correlations, temporal_leakage
    from puffgm.chains.spec import load_chain_spec
    from puffgm.core.validation import check_positive_finite, check_positive_int

    where = "puffgm leakage"
    if args.length is not None:
        check_positive_int(args.length, "length", where)
    if args.target is None:
        if args.epsilon is not None:
            check_positive_finite(args.epsilon, "epsilon", where)
        for j, e in enumerate(args.epsilons or (), start=1):
            check_positive_finite(e, f"epsilons (budget {j})", where)
        res = temporal_leakage(args.chain, epsilon=args.epsilon, epsilons=args.epsilons, length=args.length)
        return json.dumps(res.to_dict(), allow_nan=False) if args.json else res.explain()
    alpha = check_positive_finite(args.target, "target", where)
    length = args.length if args.length is not None else load_chain_spec(args.chain).length
    members = temporal_correlations(args.chain)  # read the spec once for both schemes
    const = allocate_budget(members, epsilon=alpha, length=length)
    ends, ends_dict = _ends(members, alpha, length)
    if args.json:
        d = const.leakage.to_dict()
        d.update(target=alpha, epsilon_step=const.epsilon_step, infeasible_above=const.infeasible_above,
                 ends=ends_dict)
        return json.dumps(d, allow_nan=False)
    parts = [const.explain(), const.leakage.explain()]
    parts.append(ends.explain() if ends is not None else f"budgets with larger ends: {ends_dict['reason']}")
    return "\n\n".join(parts)
