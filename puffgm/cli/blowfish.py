"""``puffgm blowfish``: policy-specific sensitivity and releases under a Blowfish policy.

Two modes::

    puffgm blowfish sensitivity --policy POLICY --query QUERY [--method auto|closed|enumerate] [--n N] [--json]
    puffgm blowfish release     --policy POLICY --query QUERY --data DATA --epsilon E [--seed S] [--json]

POLICY, QUERY and DATA are JSON text or the path of a JSON file (``@file`` also works).  POLICY is
:func:`puffgm.blowfish.policy_from_dict`'s form, e.g.
``{"domain": {"kind": "ordered", "size": 10}, "graph": {"kind": "distance", "theta": 2}}``.
QUERY is ``{"kind": "histogram", "partition": [[...], ...]}`` (partition optional),
``{"kind": "cumulative"}``, ``{"kind": "linear", "values": [...]}`` (g per domain
value; default the ranks), ``{"kind": "ordered", "inference": true, "ranges": [[a, b], ...]}``
or ``{"kind": "ordered_hierarchical", "fanout": f, "ranges": [...]}`` (release only).
DATA is a JSON list of domain values.  Without ``--seed`` noise is OpenDP's secure sampler.
"""

from __future__ import annotations

import json

_KINDS = ("histogram", "cumulative", "linear", "ordered", "ordered_hierarchical")

__all__ = ["register", "run"]


def register(p) -> None:
    sub = p.add_subparsers(dest="mode", metavar="MODE")
    sub.required = True
    s = sub.add_parser("sensitivity", help="policy-specific global sensitivity S(f, P) (Definition 5.1)")
    r = sub.add_parser("release", help="release a query under the policy (Theorem 5.1, section 7)")
    for q in (s, r):
        q.add_argument("--policy", required=True, metavar="JSON_OR_FILE", help="policy, as JSON text or a JSON file")
        q.add_argument("--query", default='{"kind": "histogram"}', metavar="JSON_OR_FILE",
                       help="query, as JSON text or a JSON file (default: histogram)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--method", choices=("auto", "closed", "enumerate"), default="auto",
                   help="closed form (unconstrained policies), brute-force enumeration, or auto")
    s.add_argument("--n", type=int, default=None, help="number of tuples for enumeration (default: the policy's n)")
    r.add_argument("--data", required=True, metavar="JSON_OR_FILE",
                   help="JSON list of domain values, as JSON text or a JSON file")
    r.add_argument("--epsilon", type=float, required=True, help="privacy parameter")
    r.add_argument("--seed", type=int, default=None, help="seeded numpy noise (NOT for production)")


def _load(text: str, what: str):
    """The parsed JSON of an argument given as JSON text, a file path or ``@file``."""
    from puffgm.blowfish.policy import PolicyError
    from puffgm.core.validation import read_json_argument

    parsed, _ = read_json_argument(text, what, PolicyError)
    return parsed


def _query(spec, policy):
    from puffgm.blowfish.policy import PolicyError
    from puffgm.core.validation import did_you_mean

    if not isinstance(spec, dict) or spec.get("kind") not in _KINDS:
        hint = did_you_mean(spec.get("kind"), _KINDS) if isinstance(spec, dict) and "kind" in spec else ""
        raise PolicyError(f"The query needs a 'kind' among {', '.join(_KINDS)}{hint}.")
    kind = spec["kind"]
    part = spec.get("partition")
    if part is not None:
        if not isinstance(part, list) or not all(isinstance(b, list) for b in part):
            raise PolicyError("The query's 'partition' must be a list of lists of domain values.")
        part = [[tuple(v) if isinstance(v, list) else v for v in b] for b in part]
    values = spec.get("values")
    if values is not None and not isinstance(values, list):
        raise PolicyError("The query's 'values' must be a list with one number (or vector) per domain value.")
    if kind in ("cumulative", "ordered", "ordered_hierarchical") and policy.domain.kind != "ordered":
        raise PolicyError(f"A {kind} query needs an ordered domain.")
    return kind, part, values


def _sensitivity(policy, kind, part, values, method, n):
    from puffgm.blowfish import sensitivity as S

    if method == "auto":
        method = "closed" if policy.unconstrained else "enumerate"
    if method == "closed":
        if kind == "histogram":
            return S.histogram_sensitivity(policy, part)
        if kind == "linear":
            return S.linear_sum_sensitivity(policy, values)
        return S.cumulative_sensitivity(policy)
    if kind == "histogram":
        f = S.histogram_query(policy, part)
    elif kind == "linear":
        f = S.linear_query(policy, values)
    else:
        f = S.cumulative_query(policy)
    return S.enumerate_sensitivity(policy, f, n, name=kind)


def run(args) -> str:
    from puffgm.blowfish.policy import PolicyError, policy_from_dict
    from puffgm.core.validation import check_positive_finite

    policy = policy_from_dict(_load(args.policy, "policy"))
    qspec = _load(args.query, "query")
    kind, part, values = _query(qspec, policy)
    if args.mode == "sensitivity":
        if args.n is not None and args.n < 1:
            raise PolicyError(f"--n must be an integer >= 1; got {args.n}.")
        s = _sensitivity(policy, kind, part, values, args.method, args.n)
        if args.json:
            return json.dumps(dict(s.to_dict(), policy=policy.explain()), allow_nan=False, default=str)
        return f"{policy.explain()}\n{s.explain()}"
    eps = check_positive_finite(args.epsilon, "epsilon", "puffgm blowfish release")
    data = _load(args.data, "data")
    if not isinstance(data, list) or not data:
        raise PolicyError("The data must be a non-empty JSON list of domain values.")
    data = [tuple(v) if isinstance(v, list) else v for v in data]
    from puffgm.blowfish import mechanisms as M
    from puffgm.blowfish import ordered as O

    if not policy.unconstrained:
        if kind not in ("histogram", "linear", "cumulative"):
            raise PolicyError("Under count constraints only histogram, linear and cumulative queries are released.")
        s = _sensitivity(policy, kind, part, values, "enumerate", None)
        from puffgm.blowfish.sensitivity import cumulative_query, histogram_query, linear_query

        f = {"histogram": lambda: histogram_query(policy, part), "linear": lambda: linear_query(policy, values),
             "cumulative": lambda: cumulative_query(policy)}[kind]()
        if policy.n is not None and len(data) != policy.n:
            raise PolicyError(f"The data has {len(data)} tuples but the policy says n = {policy.n}.")
        if not policy.satisfies(data):
            raise PolicyError("The data does not satisfy the policy's constraints.")
        rel = M.laplace_mechanism(f(data), policy, epsilon=eps, sensitivity=s, random_state=args.seed)
    elif kind == "histogram":
        rel = M.release_histogram(data, policy, epsilon=eps, partition=part, random_state=args.seed)
    elif kind == "linear":
        rel = M.release_linear_sum(data, policy, epsilon=eps, values=values, random_state=args.seed)
    elif kind == "cumulative":
        rel = M.release_cumulative(data, policy, epsilon=eps, random_state=args.seed)
    elif kind == "ordered":
        rel = O.ordered_mechanism(data, policy, epsilon=eps, inference=bool(qspec.get("inference", True)),
                                  random_state=args.seed)
    else:
        fan = qspec.get("fanout")
        rel = O.ordered_hierarchical_mechanism(data, policy, epsilon=eps, options=O.HierarchicalOptions(fanout=fan),
                                               random_state=args.seed, inference=bool(qspec.get("inference", False)))
    out = rel.to_dict()
    ranges = qspec.get("ranges")
    if ranges is not None:
        if kind not in ("ordered", "ordered_hierarchical", "cumulative"):
            raise PolicyError("'ranges' are answered from cumulative releases only.")
        if not isinstance(ranges, list) or not all(isinstance(r, list) and len(r) == 2 for r in ranges):
            raise PolicyError("'ranges' must be a list of [low, high] rank pairs.")
        out["ranges"] = [[a, b, O.range_query(rel.value, a, b)] for a, b in ranges]
    if args.json:
        return json.dumps(out, allow_nan=False, default=str)
    text = rel.explain() + "\nvalue: " + json.dumps(out["value"])
    if "ranges" in out:
        text += "\n" + "\n".join(f"range [{a}, {b}]: {v:.6g}" for a, b, v in out["ranges"])
    return text
