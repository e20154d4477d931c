"""``puffgm conditions``: Bai et al.'s necessary conditions for composition on a mechanism given in JSON.

::

    puffgm conditions MECHANISM.json [--epsilon E] [--json]

The JSON file is the spec of ``puffgm audit SPEC.json`` (docs/framework/cli.md): the
instantiation -- ``nodes``, ``states``, ``priors`` (joint tables or small networks),
``pairs`` (``"default"`` or secret pairs), ``protected`` -- and a finite-range mechanism,
the table of its output probabilities per database::

    {"nodes": ["X"], "states": {"X": [0, 1]},
     "priors": [{"table": [0.5, 0.5]}],
     "pairs": [[{"node": "X", "value": 0}, {"node": "X", "value": 1}]],
     "mechanism": {"type": "finite", "table": [[0.75, 0.25], [0.25, 0.75]]}}

Row ``i`` of ``table`` is the law of the output on the ``i``-th database in the order of
``itertools.product`` over the nodes' states (the first node varies slowest); a table of
shape ``states + (n_outputs,)`` is read too.  ``"mechanisms": [{...}, {...}]`` gives the set
M_1..M_m of Theorem 4 (their ranges are taken disjoint and checked together).

The check (:func:`puffgm.framework.composition_conditions.check_composition_conditions`,
Bai, He, Gu, Kifer and Maeng, "Composition for Pufferfish privacy", Theorems 4 and 5)
is a result, not an error: the command exits 0 and says whether the conditions hold
(``"holds": true`` or ``false`` with ``--json``); exit code 2 and one line on stderr mean
the input could not be read or checked.
"""

from __future__ import annotations

import math

__all__ = ["register", "run"]

EPILOG = ("Exit status: 0 when the check ran, whether the conditions hold or fail (read 'holds' in the JSON "
          "answer, or HOLD / FAIL in the text); 2 with one line on stderr for unreadable or invalid input. "
          "The input format is that of 'puffgm audit SPEC.json' with a finite mechanism: "
          '"mechanism": {"type": "finite", "table": [[P(w | D) for each output w] for each database D]}, '
          'or "mechanisms": [...] for several. See docs/framework/composition_conditions.md.')


def register(p) -> None:
    p.epilog = EPILOG
    p.add_argument("spec", metavar="MECHANISM.json",
                   help="JSON instantiation (nodes, states, priors, pairs or protected) and a finite mechanism "
                        "(output probability table per database), or 'mechanisms' for several")
    p.add_argument("--epsilon", type=float, default=None,
                   help="check the conditions at this epsilon (>= 0; default: the mechanisms' exact single-run "
                        "Pufferfish loss, the best epsilon they are private at)")
    p.add_argument("--max-states", type=int, default=2**16, help="largest database enumerated (default 65536)")
    p.add_argument("--max-reported", type=int, default=10, help="violating checks listed (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object (with 'holds': true or false)")


def _finite_mechanisms(spec: dict) -> list:
    """The output tables of the spec's finite mechanisms (``mechanism`` or ``mechanisms``)."""
    import numpy as np

    from puffgm.exceptions import ParameterError

    if "mechanism" in spec and "mechanisms" in spec:
        raise ParameterError("Give either 'mechanism' or 'mechanisms', not both.")
    entries = spec["mechanisms"] if "mechanisms" in spec else [spec["mechanism"]]
    if not isinstance(entries, list) or not entries:
        raise ParameterError("'mechanisms' must be a non-empty list of finite mechanisms.")
    tables = []
    for m in entries:
        if not isinstance(m, dict) or m.get("type", "finite") != "finite" or "table" not in m:
            raise ParameterError('The composition conditions need finite-range mechanisms: '
                                 '{"type": "finite", "table": [[P(w | D) ...] per database]}; got '
                                 f"{str(m)[:80]}.")
        if m.get("runs", 1) != 1:
            raise ParameterError("'runs' does not apply: the conditions are about any number of runs.")
        try:
            table = np.asarray(m["table"], dtype=float)
        except (TypeError, ValueError):
            raise ParameterError("A mechanism's 'table' must be an array of numbers "
                                 "(one row of output probabilities per database).") from None
        tables.append(table)
    return tables


def run(args) -> str:
    from puffgm.cli.audit import read_spec
    from puffgm.core.release import jsonable
    from puffgm.exceptions import ParameterError
    from puffgm.framework.composition_conditions import check_composition_conditions

    if args.epsilon is not None and not (math.isfinite(args.epsilon) and args.epsilon >= 0):
        raise ParameterError(f"The 'epsilon' parameter of puffgm conditions must be a finite number >= 0. "
                             f"Got {args.epsilon!r} instead.")
    spec, inst = read_spec(args.spec, max_states=args.max_states, mechanism_keys=("mechanism", "mechanisms"))
    tables = _finite_mechanisms(spec)
    result = check_composition_conditions(inst, tables if "mechanisms" in spec else tables[0],
                                          epsilon=args.epsilon, max_reported=args.max_reported)
    if args.json:
        import json

        out = result.to_dict()
        out["instantiation"] = inst.describe()
        return json.dumps(jsonable(out), indent=2, allow_nan=False)
    return result.explain()
