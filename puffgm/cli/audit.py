"""``puffgm audit``: exact Pufferfish audit of a small instantiation, or of a paper case.

Three forms::

    puffgm audit SPEC.json [--json]                 # instantiation + mechanism in JSON
    puffgm audit NET.bif|example:NAME --scale B     # Laplace on the count/sum of a small network
    puffgm audit --case flu|close-adversary|bai-4.1|bai-4.2|bai-4.3|exam-order|theorem-6|lemma-7.1|all

The JSON spec (see docs/framework/cli.md)::

    {"nodes": ["A", "B"], "states": {"A": [0, 1], "B": [0, 1]},
     "priors": [{"table": [[0.4, 0.1], [0.1, 0.4]]}, {"network": "example:asia"}],
     "pairs": "default" | [[{"node": "A", "value": 0}, {"node": "A", "value": 1}], ...],
     "protected": ["A"],
     "mechanism": {"type": "laplace", "query": "sum", "scale": 1.0}}

Mechanism types: ``laplace`` (query, scale), ``finite`` (table of output
probabilities, optional ``runs``), ``exponential`` (utility table, epsilon or
scale), ``wasserstein`` (query, epsilon).  A query is ``"sum"`` (sum of the
state values, or of state indices for non-numeric states), ``{"weights": {node: w}}``
or ``{"table": [...]}``.  pgmpy is imported only when a network is loaded.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from puffgm.cli.arguments import add_renamed_flag

CASE_NAMES = ("flu", "close-adversary", "bai-4.1", "bai-4.2", "bai-4.3", "exam-order", "theorem-6", "lemma-7.1")

__all__ = ["register", "run", "read_spec"]


def register(p) -> None:
    p.add_argument("spec", nargs="?", default=None,
                   help="JSON spec of an instantiation and mechanism, a network file (BIF, XMLBIF, Hugin .net, "
                        "GeNIe .xdsl, UAI, XBN) or example:NAME")
    p.add_argument("--case", default=None, choices=CASE_NAMES + ("all",),
                   help="reproduce a case of the papers instead of auditing a spec")
    p.add_argument("--scale", type=float, default=None, help="Laplace scale (network form)")
    p.add_argument("--epsilon", type=float, default=None,
                   help="epsilon for --case, or Wasserstein calibration in the network form")
    add_renamed_flag(p, "--protected", "--protect", default=None,
                     help="comma-separated protected nodes (network form; --protect: deprecated)")
    p.add_argument("--count-state", default=None,
                   help="network form: the query counts nodes in this state (default: sum of state indices)")
    p.add_argument("--max-states", type=int, default=2**16, help="largest database enumerated (default 65536)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _json_default(o):
    import numpy as np

    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, tuple):
        return list(o)
    return str(o)


def _dumps(obj) -> str:
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(obj), indent=2, default=_json_default, allow_nan=False)


def run(args) -> str:
    from puffgm.exceptions import ParameterError

    if args.epsilon is not None and not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ParameterError(
            f"The 'epsilon' parameter of puffgm audit must be a finite number > 0. Got {args.epsilon!r} instead.")
    if args.scale is not None and not (math.isfinite(args.scale) and args.scale > 0):
        raise ParameterError(
            f"The 'scale' parameter of puffgm audit must be a finite number > 0. Got {args.scale!r} instead.")
    if args.case:
        if args.spec:
            raise ParameterError("Give either a SPEC or --case, not both.")
        return _run_cases(args)
    if not args.spec:
        raise ParameterError("Give a JSON spec, a network (BIF file or example:NAME), or --case.")
    if args.spec.lower().endswith(".json"):
        if args.scale is not None:
            raise ParameterError("--scale applies to a network; a JSON spec gives its mechanism's own scale.")
        return _run_spec(args)
    return _run_network(args)


# --------------------------------------------------------------------------- cases


def _run_cases(args) -> str:
    from puffgm.framework.paper_numbers import compute_case

    names = CASE_NAMES if args.case == "all" else (args.case,)
    results = [compute_case(n, epsilon=args.epsilon) for n in names]
    if args.json:
        return _dumps(results if args.case == "all" else results[0])
    return "\n\n".join(_case_text(r) for r in results)


def _fmt(x):
    if isinstance(x, float):
        return f"{x:.10g}"
    return str(x)


def _case_text(r: dict) -> str:
    lines = [f"[{r['case']}] {r['reference']}"]
    c = r["case"]
    if c == "flu":
        lines.append(f"W = {_fmt(r['W'])} (paper 2); "
                     f"group-DP sensitivity = {_fmt(r['group_dp_sensitivity'])} (paper 4)")
        lines.append(f"epsilon {r['epsilon']:g}: Laplace scale {_fmt(r['scale'])} "
                     f"vs group DP {_fmt(r['group_dp_scale'])}; audited loss {_fmt(r['audited_loss'])}")
    elif c == "close-adversary":
        lines.append(f"unconditioned max-divergence = log {_fmt(r['exp_unconditioned'])} (paper log 90)")
        lines.append(f"conditioned on s = log {_fmt(r['exp_conditioned'])} = {r['conditioned_exact']} "
                     "(paper log 91.0962; rounded conditionals give log "
                     f"{_fmt(r['paper_value_from_rounded_conditionals'])})")
        lines.append(f"Theorem 2.4 degraded guarantee at epsilon {r['epsilon']:g}: {_fmt(r['degraded_epsilon'])}")
    elif c in ("bai-4.1", "bai-4.3"):
        if c == "bai-4.3":
            lines.append(f"bounds {r['bounds']}; Theorem 3 epsilon = {_fmt(r['theorem_3_epsilon'])}")
        lines.append(f"one run: loss {_fmt(r['one_run_loss'])}; two runs: loss {r['two_run_loss']} "
                     f"(witness outputs {', '.join(r['two_run_witness'])})")
        extra = f"; Theorem 1 bound {_fmt(r['theorem_1_bound'])}" if c == "bai-4.1" else " (Theorem 3: 3)"
        lines.append(f"expected runs to reveal the {r['target']}: exact {_fmt(r['expected_runs_exact'])}, "
                     f"simulated {r['expected_runs_simulated']:.3f} +- {r['simulation_stderr']:.3f}{extra}")
    elif c == "bai-4.2":
        lines.append("n  one-run loss  two-run loss  expected runs (exact, simulated; Theorem 2: 3)")
        for row in r["rows"]:
            lines.append(f"{row['n']}  {_fmt(row['one_run_loss'])}  {row['two_run_loss']}  "
                         f"{_fmt(row['expected_runs_exact'])}, {row['expected_runs_simulated']:.3f}")
    elif c == "exam-order":
        lines.append(f"Laplace scale 1/epsilon (epsilon-DP) on the number who took the exam, epsilon {r['epsilon']:g}")
        lines.append("n  audited loss  closed form  log mean e^{eps j} (Ex. 9.2)  loss at scale n/eps")
        for row in r["rows"]:
            lines.append(f"{row['n']}  {_fmt(row['audited_loss'])}  {_fmt(row['closed_form'])}  "
                         f"{_fmt(row['example_9_2_ratio_log'])}  {_fmt(row['scale_n_over_epsilon_loss'])}")
    elif c == "theorem-6":
        lines.append(f"Laplace scale 1/epsilon on the sum, epsilon {r['epsilon']:g}, n {r['n']}: "
                     f"independent priors loss {_fmt(r['independent_priors_loss'])} "
                     f"(passes: {r['passes_independent']}); correlated prior loss "
                     f"{_fmt(r['correlated_prior_loss'])} (passes: {r['passes_correlated']})")
    elif c == "lemma-7.1":
        lines.append(f"sum + Lap(4k/epsilon) with k {r['k']:g}, epsilon {r['epsilon']:g}, "
                     f"grid step {r['grid_step']:g}: audited loss {_fmt(r['audited_loss'])} "
                     f"(expected epsilon (1 - step/4k) = {_fmt(r['expected_worst'])})")
    if "slip" in r:
        lines.append(f"paper slip: {r['slip']}")
    if "note" in r:
        lines.append(f"note: {r['note']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- spec / network


def _numeric(v, idx):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float(idx)


def _query(spec_q, inst):
    from puffgm.exceptions import ParameterError

    if spec_q is None or spec_q == "sum":
        idx = {n: {s: i for i, s in enumerate(inst.states[n])} for n in inst.nodes}
        return lambda a: sum(_numeric(v, idx[n][v]) for n, v in a.items())
    if isinstance(spec_q, dict) and "weights" in spec_q:
        w = spec_q["weights"]
        if not isinstance(w, dict) or not all(_is_real(x) for x in w.values()):
            raise ParameterError("The query's 'weights' must be an object node -> number.")
        unknown = [n for n in w if n not in inst.axis]
        if unknown:
            raise ParameterError(f"The query weights name unknown node(s) {unknown!r}.")
        idx = {n: {s: i for i, s in enumerate(inst.states[n])} for n in inst.nodes}
        return lambda a: sum(float(w.get(n, 0.0)) * _numeric(v, idx[n][v]) for n, v in a.items())
    if isinstance(spec_q, dict) and "table" in spec_q:
        return _array(spec_q["table"], "The query's 'table'")
    raise ParameterError("A query must be \"sum\", {\"weights\": {...}} or {\"table\": [...]}.")


def _is_real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_scalar(x) -> bool:
    """A state: a string, a number or a boolean (not a list or an object)."""
    return isinstance(x, (str, int, float, bool))


def _names(x) -> bool:
    """True for a list of strings."""
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


def _array(value, what: str):
    """``value`` as a float array, or a ParameterError naming ``what``."""
    import numpy as np

    from puffgm.exceptions import ParameterError

    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must be a (nested) list of numbers of one shape.") from None


def _secret(d):
    from puffgm.exceptions import SecretError
    from puffgm.framework import Secret

    if not isinstance(d, dict) or not isinstance(d.get("node"), str):
        raise SecretError(f"A secret must be an object with a 'node' key naming a node; got {d!r}.")
    if "value" in d and not _is_scalar(d["value"]) or "in" in d and not (
            isinstance(d["in"], list) and all(_is_scalar(x) for x in d["in"])):
        raise SecretError(f"The secret {d!r} needs a state under 'value', or a list of states under 'in'.")
    if "value" in d:
        return Secret.value(d["node"], d["value"])
    if "in" in d:
        return Secret.in_set(d["node"], d["in"])
    if "low" in d or "high" in d:
        low, high = d.get("low", -math.inf), d.get("high", math.inf)
        if not (_is_real(low) and _is_real(high)):
            raise SecretError(f"The secret {d!r} needs numbers under 'low' and 'high'.")
        return Secret.region(d["node"], low, high)
    raise SecretError(f"The secret {d!r} needs 'value', 'in' or 'low'/'high'.")


def _load_priors(entries, base):
    from puffgm.exceptions import PriorError

    out: list[Any] = []  # probability tables and networks
    for e in entries:
        if isinstance(e, dict) and "table" in e:
            out.append(_array(e["table"], "A prior's 'table'"))
        elif isinstance(e, dict) and "network" in e:
            from puffgm.networks.priors import load_network

            path = e["network"]
            if not isinstance(path, str):
                raise PriorError(f"A prior's 'network' must be a file name or 'example:NAME'; got {path!r}.")
            if not path.startswith("example:") and not os.path.isabs(path):
                path = os.path.join(base, path)
            out.append(load_network(path))
        else:
            raise PriorError(f"A prior must be {{\"table\": ...}} or {{\"network\": ...}}; got {e!r}.")
    return out


def _audit(inst, mech: dict):
    from puffgm.exceptions import ParameterError
    from puffgm.framework import audit_composition, audit_exponential, audit_finite, audit_laplace
    from puffgm.framework.wasserstein import calibrate_wasserstein

    if not isinstance(mech, dict):
        raise ParameterError("The spec's 'mechanism' must be an object with a 'type' (laplace, finite, exponential "
                             f"or wasserstein) and its parameters; got {type(mech).__name__}.")
    kind = mech.get("type", "laplace")
    if not isinstance(kind, str):
        raise ParameterError(f"The mechanism's 'type' must be laplace, finite, exponential or wasserstein; "
                             f"got {kind!r}.")
    for key in {"finite": ("table",), "exponential": ("utility",)}.get(kind, ()):
        if key not in mech:
            raise ParameterError(f"A {kind} mechanism needs {key!r}.")
    if kind == "laplace":
        if "scale" not in mech:
            raise ParameterError("A laplace mechanism needs 'scale'.")
        return audit_laplace(inst, _query(mech.get("query"), inst), mech["scale"]).to_dict()
    if kind == "finite":
        runs = mech.get("runs", 1)
        if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 64:
            raise ParameterError(f"The mechanism's 'runs' must be an integer from 1 to 64; got {runs!r}.")
        table = _array(mech["table"], "The mechanism's 'table'")
        if runs == 1:
            return audit_finite(inst, table).to_dict()
        return audit_composition(inst, table, k=runs).to_dict()
    if kind == "exponential":
        return audit_exponential(inst, mech["utility"], epsilon=mech.get("epsilon"), scale=mech.get("scale"),
                                 sensitivity=mech.get("sensitivity", 1.0)).to_dict()
    if kind == "wasserstein":
        if "epsilon" not in mech:
            raise ParameterError("A wasserstein mechanism needs 'epsilon'.")
        return calibrate_wasserstein(inst, _query(mech.get("query"), inst), epsilon=mech["epsilon"]).to_dict()
    raise ParameterError(f"Unknown mechanism type {kind!r}; use laplace, finite, exponential or wasserstein.")


def read_spec(path: str, *, max_states: int = 2**16, mechanism_keys: tuple = ("mechanism",)):
    """Read a JSON spec of an instantiation and its mechanism (the format of ``puffgm audit SPEC.json``).

    Parameters
    ----------
    path : str
        The JSON file: ``nodes``, ``states``, ``priors`` (``{"table": ...}`` or ``{"network": ...}``,
        network paths relative to the file), ``pairs`` (``"default"`` or secret pairs), ``protected``
        (``protect``: deprecated spelling),
        and a mechanism under one of ``mechanism_keys``.
    max_states : int
        Largest database the instantiation may enumerate.
    mechanism_keys : tuple of str
        The keys that may hold the mechanism; the spec must have at least one.

    Returns
    -------
    (dict, Instantiation)
        The parsed spec and the instantiation (S, Theta) it describes.

    Raises
    ------
    ParameterError
        If the file is not a JSON object with ``priors`` and a mechanism key.
    """
    from puffgm.exceptions import ParameterError
    from puffgm.framework import Instantiation

    try:
        with open(path, encoding="utf-8") as fh:
            spec = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"The spec {path!r} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except UnicodeDecodeError:
        raise ParameterError(f"The spec {path!r} is not UTF-8 text.") from None
    if not isinstance(spec, dict) or "priors" not in spec or not any(k in spec for k in mechanism_keys):
        raise ParameterError(
            f"The spec must be a JSON object with 'priors' and {' or '.join(map(repr, mechanism_keys))}.")
    if not isinstance(spec["priors"], list) or not spec["priors"]:
        raise ParameterError("The spec's 'priors' must be a non-empty list of {\"table\": ...} or {\"network\": ...}.")
    priors = _load_priors(spec["priors"], os.path.dirname(os.path.abspath(path)))
    kw: dict[str, Any] = {"max_states": max_states}
    if "nodes" in spec:
        if not _names(spec["nodes"]):
            raise ParameterError("The spec's 'nodes' must be a list of node names (strings).")
        kw["nodes"] = spec["nodes"]
    if "states" in spec:
        st = spec["states"]
        ok = (all(isinstance(v, list) and all(_is_scalar(x) for x in v) for v in st.values()) if isinstance(st, dict)
              else isinstance(st, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in st))
        if not ok:
            raise ParameterError("The spec's 'states' must be an object node -> list of states, or a list of the "
                                 "nodes' numbers of states.")
        if isinstance(st, dict) and "nodes" in spec and set(st) != set(spec["nodes"]):
            raise ParameterError("The spec's 'states' must name every node of 'nodes', and no other.")
        kw["states"] = {k: tuple(v) for k, v in st.items()} if isinstance(st, dict) else st
    pairs = spec.get("pairs", "default")
    if pairs == "default":
        protect = spec.get("protected", spec.get("protect"))
        if isinstance(protect, str):  # one node name, not a sequence of characters
            protect = [protect]
        if protect is not None and not _names(protect):
            raise ParameterError("The spec's 'protected' must be a node name or a list of node names.")
        inst = Instantiation.bayesian_network_default(priors, protected=protect, **kw)
    else:
        if not isinstance(pairs, list) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise ParameterError("The spec's 'pairs' must be \"default\" or a list of [secret, secret] pairs.")
        inst = Instantiation(priors, [(_secret(a), _secret(b)) for a, b in pairs], **kw)
    return spec, inst


def _run_spec(args) -> str:
    spec, inst = read_spec(args.spec, max_states=args.max_states)
    out = _audit(inst, spec["mechanism"])
    out["instantiation"] = inst.describe()
    if args.json:
        return _dumps(out)
    return _summary(out)


def _run_network(args) -> str:
    from puffgm.exceptions import ParameterError
    from puffgm.framework import Instantiation, audit_laplace
    from puffgm.framework.wasserstein import calibrate_wasserstein
    from puffgm.networks.priors import load_network

    net = load_network(args.spec)
    protect = None if not args.protected else [s.strip() for s in args.protected.split(",") if s.strip()]
    inst = Instantiation.bayesian_network_default([net], protected=protect, max_states=args.max_states)
    if args.count_state is not None:
        cs = args.count_state
        query = lambda a: float(sum(1 for v in a.values() if str(v) == cs))  # noqa: E731
    else:
        query = _query("sum", inst)
    if args.scale is not None:
        out = audit_laplace(inst, query, args.scale).to_dict()
    elif args.epsilon is not None:
        out = calibrate_wasserstein(inst, query, epsilon=args.epsilon).to_dict()
    else:
        raise ParameterError(
            "Give --scale (audit a Laplace release) or --epsilon (calibrate the Wasserstein mechanism).")
    out["instantiation"] = inst.describe()
    return _dumps(out) if args.json else _summary(out)


def _summary(out: dict) -> str:
    if "W" in out:
        lines = [f"Wasserstein mechanism: W = {_fmt(out['W'])}, scale {_fmt(out['scale'])}, "
                 f"group-DP sensitivity {_fmt(out['group_dp_sensitivity'])}, audited loss {_fmt(out['audited_loss'])}"]
    else:
        lines = [f"{out['mechanism']}: exact Pufferfish loss {_fmt(out['loss'])}"]
        if out.get("witness"):
            w = out["witness"]
            lines.append(f"witness: prior #{w['prior']}, pair ({w['pair'][0]}, {w['pair'][1]}), output {w['output']}")
        lines.append(f"{out['n_databases']} databases, {out['n_priors']} priors, {out['n_pairs']} pairs, "
                     f"{len(out['skipped'])} skipped")
    for n in out.get("notes", []):
        lines.append(f"note: {n}")
    return "\n".join(lines)
