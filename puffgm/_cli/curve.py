"""``puffgm curve``: derive the a(b)-influence curve of prior classes (Bai et al. Definition 7).

Each PRIOR (BIF/XMLBIF path, ``example:NAME``, or chain JSON spec ``*.json``)
gives its own curve; ``--theta`` pools them into one prior class Theta instead
(as ``puffgm calibrate`` does).  ``--json`` prints one object with ``points``
(``[{"b": int, "a": float}]``, ``a`` null when infinite) and ``witnesses``
(or ``{"curves": [...]}`` for several curves).  ``--plot FILE.png`` draws the
curves with matplotlib (the ``plot`` extra: ``pip install puffgm[plot]``).
"""

from __future__ import annotations

import json


def add_prior_arguments(p) -> None:
    p.add_argument("priors", nargs="+", metavar="PRIOR",
                   help="BIF/XMLBIF file, example:NAME (bundled bnlearn network), or chain JSON spec")
    p.add_argument("--theta", action="store_true",
                   help="pool every PRIOR into one prior class Theta (default: one curve per PRIOR)")
    p.add_argument("--max-b", type=int, default=None,
                   help="largest b (default: the number of nodes; min(T, 200) for chains)")
    p.add_argument("--protect", default=None, help="comma-separated protected nodes (networks; default all)")
    p.add_argument("--max-quilt-states", type=int, default=None,
                   help="bound on the joint state space of candidate quilts (networks)")


def register(p) -> None:
    add_prior_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="save a plot of the curve(s)")


def compute_curves(args) -> list:
    """[(label, InfluenceCurve)] for the PRIOR arguments of ``args``."""
    from .._validation import check_positive_int
    from ..curves import influence_curve
    from ..exceptions import ParameterError

    if args.max_b is not None:
        check_positive_int(args.max_b, "max-b", "puffgm " + getattr(args, "command", "curve"))
    if args.max_quilt_states is not None:
        check_positive_int(args.max_quilt_states, "max-quilt-states", "puffgm " + getattr(args, "command", "curve"))
    chains = [p for p in args.priors if p.lower().endswith(".json")]
    if chains and len(chains) != len(args.priors) and args.theta:
        raise ParameterError("--theta cannot pool chain JSON specs with networks; give one kind.")
    secrets = None
    if args.protect is not None:
        from ..secrets import SecretSpec

        secrets = SecretSpec(protected=[s.strip() for s in args.protect.split(",") if s.strip()])

    def one(spec_list):
        if spec_list[0].lower().endswith(".json"):
            if secrets is not None or args.max_quilt_states is not None:
                raise ParameterError("--protect and --max-quilt-states apply to networks, not chain specs.")
            from ..chains.priors import ChainPriorClass
            from ..chains.spec import load_chain_spec

            classes = [load_chain_spec(p) for p in spec_list]
            if any(not isinstance(c, ChainPriorClass) for c in classes):
                raise ParameterError("Influence curves of a parameter box (an infinite class) are not available; "
                                     "calibrate it with 'puffgm calibrate' instead.")
            cc = classes[0] if len(classes) == 1 else ChainPriorClass(m for c in classes for m in c.members)
            return influence_curve(cc, args.max_b)
        from ..priors import load_prior_class

        theta = load_prior_class(list(spec_list))
        return influence_curve(theta, args.max_b, secrets=secrets, max_quilt_states=args.max_quilt_states)

    if args.theta:
        return [(" + ".join(args.priors), one(list(args.priors)))]
    return [(p, one([p])) for p in args.priors]


def plot_curves(curves, path: str) -> None:
    """Save the curves (one line per prior) to ``path`` with matplotlib."""
    from ..exceptions import ParameterError

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError("--plot needs matplotlib: install it with pip install 'puffgm[plot]'.") from None
    import math

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, c in curves:
        pts = [(b, a) for b, a in c.points if math.isfinite(a)]
        if pts:
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", marker="o", markersize=3, label=label)
    ax.set_xlabel("b: number of high-influence entries (card(H))")
    ax.set_ylabel("a(b): leakage through the low-influence entries")
    ax.set_title("a(b)-influence curves (Bai et al. Definition 7)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"Could not save the plot to {path!r}: {exc}") from None
    finally:
        plt.close(fig)


def run(args) -> str:
    curves = compute_curves(args)
    if args.plot:
        plot_curves(curves, args.plot)
    if args.json:
        if len(curves) == 1:
            d = curves[0][1].to_dict()
            d["prior"] = curves[0][0]
            return json.dumps(d, allow_nan=False)
        return json.dumps({"curves": [dict(c.to_dict(), prior=label) for label, c in curves]}, allow_nan=False)
    parts = []
    for label, c in curves:
        parts.append(f"{label}:\n{c.explain(max_rows=40)}")
    if args.plot:
        parts.append(f"plot saved to {args.plot}")
    return "\n\n".join(parts)
