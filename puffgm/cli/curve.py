"""``puffgm curve``: derive the a(b)-influence curve of a prior class (Bai et al. Definition 7).

PRIOR arguments (a network file in any format ``puffgm calibrate`` reads,
``example:NAME``, or chain JSON spec ``*.json``) follow the convention of
``puffgm calibrate``: several PRIORs form
ONE prior class Theta, and the curve is that class's curve (the pointwise max of
the members' own curves, docs/curves.md).  ``--each`` gives one curve per PRIOR
instead.  The old ``--theta`` flag (which used to ask for pooling) is still
accepted and does nothing: pooling is the default.

``--json`` prints one object with ``points`` (``[{"b": int, "a": float}]``,
``a`` null when infinite), ``witnesses`` and ``priors`` (the PRIORs of the
class), or ``{"curves": [...]}`` for ``--each`` with several PRIORs.
``--plot FILE.png`` draws the curve(s) with matplotlib (the ``plot`` extra:
``pip install puffgm[plot]``); a pooled class of several PRIORs is drawn as
one bold curve, with each member's own curve dashed beneath it.
"""

from __future__ import annotations

import json

from puffgm.cli.arguments import add_renamed_flag

__all__ = ["register", "run", "add_prior_arguments", "compute_curves", "plot_curves"]


def add_prior_arguments(p) -> None:
    p.add_argument("priors", nargs="+", metavar="PRIOR",
                   help="network file (BIF, XMLBIF, Hugin .net, GeNIe .xdsl, UAI, XBN; also gzipped), "
                        "example:NAME (bundled bnlearn network), or chain JSON spec")
    p.add_argument("--each", action="store_true",
                   help="one curve per PRIOR (default: several PRIORs form one prior class Theta, as in calibrate)")
    p.add_argument("--theta", action="store_true",
                   help="accepted for compatibility and ignored: pooling into one class is the default")
    p.add_argument("--max-b", type=int, default=None,
                   help="largest b (default: the number of nodes; min(T, 200) for chains)")
    add_renamed_flag(p, "--protected", "--protect", default=None,
                     help="comma-separated protected nodes (networks; default all; --protect: deprecated)")
    p.add_argument("--max-quilt-states", type=int, default=None,
                   help="bound on the joint state space of candidate quilts (networks)")


def register(p) -> None:
    add_prior_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="save a plot of the curve(s)")


def compute_curves(args, *, members: bool = False) -> list:
    """[(label, InfluenceCurve)] for the PRIOR arguments of ``args``.

    One pair for the pooled class Theta (the default, as ``puffgm calibrate``),
    or one per PRIOR with ``args.each``.  ``members=True`` (pooled mode, several
    PRIORs) appends each member's own curve after the class curve, for plots.
    """
    from puffgm.api import as_prior, kind_of
    from puffgm.core.validation import check_positive_int
    from puffgm.exceptions import ParameterError

    if args.max_b is not None:
        check_positive_int(args.max_b, "max-b", "puffgm " + getattr(args, "command", "curve"))
    if args.max_quilt_states is not None:
        check_positive_int(args.max_quilt_states, "max-quilt-states", "puffgm " + getattr(args, "command", "curve"))
    each = bool(getattr(args, "each", False))
    if each and getattr(args, "theta", False):
        raise ParameterError("--each (one curve per PRIOR) contradicts --theta (one pooled class); give one.")
    options = {}
    if args.protected is not None:
        options["protected"] = [s.strip() for s in args.protected.split(",") if s.strip()]
    if args.max_quilt_states is not None:
        options["max_quilt_states"] = args.max_quilt_states

    if not each and len({kind_of(p) for p in args.priors}) > 1:
        raise ParameterError("PRIOR arguments mix kinds of prior, which cannot form one class; give one kind, "
                             "or --each for one curve per PRIOR.")

    def one(spec_list):
        return as_prior(list(spec_list)).influence_curve(args.max_b, **options)

    if each:
        return [(p, one([p])) for p in args.priors]
    pooled = [(" + ".join(args.priors), one(list(args.priors)))]
    if members and len(args.priors) > 1:
        pooled += [(p, one([p])) for p in args.priors]
    return pooled


def plot_curves(curves, path: str, *, pooled: bool = False) -> None:
    """Save the curves to ``path`` with matplotlib.

    ``pooled``: ``curves[0]`` is the class curve (drawn bold) and the rest are its
    members' own curves (drawn dashed); otherwise one line per prior.
    """
    from puffgm.exceptions import ParameterError

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError("--plot needs matplotlib: install it with pip install 'puffgm[plot]'.") from None
    import math

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for j, (label, c) in enumerate(curves):
        pts = [(b, a) for b, a in c.points if math.isfinite(a)]
        if not pts:
            continue
        style = dict(marker="o", markersize=3, label=label)
        if pooled and j == 0:
            style.update(linewidth=2.5, color="black", label=f"class Theta = {label}")
        elif pooled:
            style.update(linestyle="--", linewidth=1, alpha=0.7, label=f"member {label}")
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", **style)
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
    pooled = not args.each and len(args.priors) > 1
    curves = compute_curves(args, members=pooled and bool(args.plot))
    if args.plot:
        plot_curves(curves, args.plot, pooled=pooled)
    if pooled:
        curves = curves[:1]  # the class curve; members only serve the plot
    if args.json:
        if len(curves) == 1:
            label, curve = curves[0]
            d = curve.to_dict()
            d["prior"] = label
            d["priors"] = list(args.priors) if not args.each else [label]
            return json.dumps(d, allow_nan=False)
        return json.dumps({"curves": [dict(c.to_dict(), prior=label, priors=[label]) for label, c in curves]},
                          allow_nan=False)
    parts = []
    for label, c in curves:
        parts.append(f"{label}:\n{c.explain(max_rows=40)}")
    if args.plot:
        parts.append(f"plot saved to {args.plot}")
    return "\n\n".join(parts)
