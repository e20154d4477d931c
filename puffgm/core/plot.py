r"""Pictures of a calibration's active quilt: the worst node, its quilt, nearby set and remote set.

The Markov Quilt Mechanism (Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms
for Correlated Data", SIGMOD 2017, Algorithm 2) calibrates its noise on the node whose
best Markov quilt has the largest score :math:`\operatorname{card}(X_N) / (\epsilon - e(X_Q \mid X_i))`.  This
module draws that quilt:

* for a Bayesian network, the DAG in layers (topological generations from networkx,
  parents above children, root nodes moved down next to their children, each layer
  ordered by the mean position of the parents to cut crossings), every node labelled
  and coloured by its set;
* for a Markov chain X1 -> ... -> XT, the positions along the chain, runs of more than
  six positions of one set shortened to their two ends around a count.

The legend gives the quilt's max-influence and the score, the title the noise scale.
matplotlib (the ``plot`` extra, ``pip install 'puffgm[plot]'``) and networkx are
imported only when a picture is drawn.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any, NamedTuple

from puffgm.exceptions import ParameterError

__all__ = ["plot_calibration", "require_matplotlib", "COLOURS"]

#: Fill colours of the four sets (and "other" for nodes outside them).
COLOURS = {"worst": "#d62728", "quilt": "#ff7f0e", "nearby": "#fdd49e", "remote": "#c6dbef", "other": "#e0e0e0"}
_BORDERS = {"worst": "#67000d", "quilt": "#8c2d04", "nearby": "#b07d2b", "remote": "#4a7bb7", "other": "#808080"}
_ORDER = ("worst", "quilt", "nearby", "remote", "other")
_RUN = 6  # runs of one set longer than this are shortened along a chain


def require_matplotlib() -> Any:
    """Import matplotlib, or raise a one-line ParameterError saying how to install it.

    Returns
    -------
    module
        The ``matplotlib`` module.
    """
    try:
        import matplotlib
    except ImportError:
        raise ParameterError("Quilt pictures need matplotlib: install it with pip install 'puffgm[plot]'.") from None
    return matplotlib


def plot_calibration(result: Any, path: str | None = None, *, ax: Any = None, graph: Any = None) -> Any:
    """Draw a calibration's worst node with its quilt, nearby and remote sets (see :meth:`CalibrationResult.plot`).

    Parameters
    ----------
    result : CalibrationResult
        A calibration with a worst-node quilt (not a quilt-free baseline).
    path : str, optional
        File to save the picture to (format from the extension).
    ax : matplotlib Axes, optional
        Axes to draw into; by default a new figure.
    graph : optional
        The structure when ``result.graph`` is None: a networkx DiGraph, a pgmpy model,
        an object with a ``dag`` (a network PriorClass), a list of (parent, child) pairs,
        or for a chain its length T (an int) or an object with a ``length``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn into.

    Raises
    ------
    ParameterError
        Without matplotlib, without a quilt or a graph, or if ``path`` cannot be written.
    """
    require_matplotlib()
    worst = getattr(result, "worst", None)
    if worst is None or not getattr(result, "applicable", True):
        raise ParameterError(f"Nothing to draw: the {getattr(result, 'method', '?')} calibration has no quilt "
                             "(baselines such as group DP use none).")
    g = _resolve_graph(result, graph)
    members = _membership(worst)
    if g.kind == "chain":
        items = _chain_items(members, g.length)
        fig, axes = _axes(ax, path, (max(6.0, 0.78 * len(items)), 2.2))
        _draw_chain(axes, items)
    else:
        pos, shape = _dag_positions(g.nodes, g.edges)
        fig, axes = _axes(ax, path, (max(6.5, 1.45 * shape[0]), max(4.0, 1.05 * shape[1] + 1.6)))
        _draw_dag(axes, pos, g.edges, members, fontsize=8 if len(pos) <= 40 else 6.5)
    outside = g.kind == "dag" and bool(set(pos) - set(members))
    _legend_and_title(axes, result, worst, present={"other"} if outside else set())
    if path is not None:
        try:
            fig.savefig(path, dpi=150, bbox_inches="tight")
        except (OSError, ValueError) as exc:
            raise ParameterError(f"Could not save the quilt picture to {path!r}: {exc}") from None
    return fig


def _resolve_graph(result: Any, graph: Any) -> Any:
    """The DAG or chain to draw: ``graph`` if given, else the one the result carries."""
    if graph is None:
        graph = getattr(result, "graph", None)
        if graph is None:
            raise ParameterError("This result carries no graph to draw (it was not made by a puffgm engine); "
                                 "pass graph= (the network's DAG, a pgmpy model, or a chain's length).")
        return graph
    if getattr(graph, "kind", None) in ("dag", "chain") and hasattr(graph, "edges"):
        return graph  # a QuiltGraph
    if isinstance(graph, int) and not isinstance(graph, bool) and graph >= 1:
        return SimpleNamespace(kind="chain", nodes=(), edges=(), length=graph)
    if isinstance(getattr(graph, "length", None), int):
        return SimpleNamespace(kind="chain", nodes=(), edges=(), length=graph.length)
    obj = getattr(graph, "dag", graph)
    edges = getattr(obj, "edges", None)
    if edges is not None:
        edges = edges() if callable(edges) and not hasattr(edges, "__iter__") else edges
        nodes = getattr(obj, "nodes", ())
        nodes = nodes() if callable(nodes) and not hasattr(nodes, "__iter__") else nodes
    else:
        edges, nodes = obj, ()
    try:
        edges = tuple((str(u), str(v)) for u, v in edges)
    except (TypeError, ValueError):
        raise ParameterError("graph= must be a DAG (networkx or pgmpy), a list of (parent, child) pairs, "
                             "or a chain's length.") from None
    nodes = tuple(dict.fromkeys([str(n) for n in nodes] + [n for e in edges for n in e]))
    return SimpleNamespace(kind="dag", nodes=nodes, edges=edges, length=0)


def _membership(worst: Any) -> dict:
    """Node name -> "worst", "quilt", "nearby" or "remote" for the worst node's quilt."""
    members = {str(n): "remote" for n in worst.remote}
    members.update({str(n): "nearby" for n in worst.nearby})
    members.update({str(n): "quilt" for n in worst.quilt})
    members[str(worst.node)] = "worst"
    return members


def _axes(ax: Any, path: str | None, size: tuple) -> tuple:
    """(figure, axes): the given axes, a pyplot figure to show, or a detached figure to save."""
    if ax is not None:
        return ax.figure, ax
    if path is not None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=size)
        return fig, fig.add_subplot()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(figsize=size)
    return fig, axes


# --------------------------------------------------------------------------- networks


def _dag_positions(nodes: tuple, edges: tuple) -> tuple:
    """Layered positions {node: (x, y)} and (widest layer, number of layers).

    Layers are networkx's topological generations; a root is moved down to the layer just
    above its highest child; each layer is ordered by the mean x of the parents (two sweeps).
    """
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    if not nx.is_directed_acyclic_graph(g):
        raise ParameterError("The graph to draw is not a DAG.")
    depth = {n: d for d, gen in enumerate(nx.topological_generations(g)) for n in gen}
    for n in g:
        if g.in_degree(n) == 0 and g.out_degree(n) > 0:
            depth[n] = min(depth[c] for c in g.successors(n)) - 1
    layers: dict = {}
    for n in g:  # network order within a layer to start with
        layers.setdefault(depth[n], []).append(n)
    keys = sorted(layers)
    x: dict = {}
    for _sweep in range(2):
        for k in keys:
            row = layers[k]
            centre = {n: _mean([x[p] for p in g.predecessors(n) if p in x] +
                               [x[c] for c in g.successors(n) if c in x and _sweep]) for n in row}
            row.sort(key=lambda n, _c=centre: (_c[n] if _c[n] is not None else 0.0))
            for i, n in enumerate(row):
                x[n] = i - (len(row) - 1) / 2
    pos = {n: (x[n], -float(keys.index(depth[n]))) for n in g}
    return pos, (max(len(r) for r in layers.values()), len(keys))


def _mean(values: list) -> float | None:
    return sum(values) / len(values) if values else None


def _node_box(axes: Any, xy: tuple, text: str, kind: str, fontsize: float) -> Any:
    return axes.text(xy[0], xy[1], text, ha="center", va="center", fontsize=fontsize, zorder=3,
                     color="white" if kind in ("worst", "quilt") else "black",
                     fontweight="bold" if kind == "worst" else "normal",
                     bbox={"boxstyle": "round,pad=0.35", "facecolor": COLOURS[kind], "edgecolor": _BORDERS[kind],
                           "linewidth": 1.6 if kind in ("worst", "quilt") else 0.9})


def _arrow(axes: Any, a: Any, b: Any, style: str = "-|>", dashed: bool = False) -> None:
    # above the boxes: their outlines are known when the arrow is drawn, so it stops at their edges
    axes.annotate("", xy=b.get_position(), xytext=a.get_position(), zorder=4,
                  arrowprops={"arrowstyle": style, "color": "#555555", "linewidth": 0.8, "shrinkA": 1, "shrinkB": 1,
                              "patchA": a.get_bbox_patch(), "patchB": b.get_bbox_patch(),
                              "linestyle": "--" if dashed else "-", "mutation_scale": 11})


def _draw_dag(axes: Any, pos: dict, edges: tuple, members: dict, *, fontsize: float) -> None:
    boxes = {n: _node_box(axes, xy, n, members.get(n, "other"), fontsize) for n, xy in pos.items()}
    for u, v in edges:
        _arrow(axes, boxes[u], boxes[v])
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    axes.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    axes.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    axes.set_axis_off()


# --------------------------------------------------------------------------- chains


def _position(name: str) -> int:
    m = re.fullmatch(r"X(\d+)", name)
    if m is None:
        raise ParameterError(f"The node {name!r} is not a chain position X1, X2, ...; draw it with a DAG (graph=).")
    return int(m.group(1))


class _ChainItem(NamedTuple):
    """One box along a drawn chain: a position, or (``position`` None) a gap of ``hidden`` positions."""

    position: int | None
    kind: str
    hidden: int = 0


def _chain_items(members: dict, length: int) -> list[_ChainItem]:
    """Display items along the chain: (position, kind) or ("gap", kind, count) for shortened runs."""
    special = {_position(n): k for n, k in members.items() if k != "remote"}
    length = max(length, max(special))
    runs: list = []  # (kind, first, last)
    p = 1
    for q in sorted(special) + [length + 1]:
        if q > p:
            runs.append(("remote", p, q - 1))
        if q <= length:
            kind = special[q]
            if runs and runs[-1][0] == kind and runs[-1][2] == q - 1:
                runs[-1] = (kind, runs[-1][1], q)
            else:
                runs.append((kind, q, q))
        p = q + 1
    items: list[_ChainItem] = []
    for kind, first, last in runs:
        n = last - first + 1
        if n > _RUN:
            items += [_ChainItem(first, kind), _ChainItem(first + 1, kind), _ChainItem(None, kind, n - 4),
                      _ChainItem(last - 1, kind), _ChainItem(last, kind)]
        else:
            items += [_ChainItem(i, kind) for i in range(first, last + 1)]
    return items


def _draw_chain(axes: Any, items: list[_ChainItem]) -> None:
    boxes = []
    for i, item in enumerate(items):
        if item.position is None:
            boxes.append(_node_box(axes, (i, 0.0), f"... {item.hidden} ...", item.kind, 7))
        else:
            boxes.append(_node_box(axes, (i, 0.0), f"X{item.position}", item.kind, 8))
    for i in range(len(boxes) - 1):
        _arrow(axes, boxes[i], boxes[i + 1], dashed=items[i].position is None or items[i + 1].position is None)
    axes.set_xlim(-0.7, len(items) - 0.3)
    axes.set_ylim(-0.6, 0.6)
    axes.set_axis_off()


# --------------------------------------------------------------------------- legend


def _legend_and_title(axes: Any, result: Any, worst: Any, *, present: set) -> None:
    from matplotlib.patches import Patch

    e = worst.max_influence
    influence = "inf" if e == float("inf") else f"{e:.4g}"
    score = "inf" if worst.score == float("inf") else f"{worst.score:.4g}"
    labels = {
        "worst": f"worst node {worst.node}",
        "quilt": (f"quilt X_Q ({len(worst.quilt)}): max-influence {influence}" if worst.quilt
                  else f"quilt X_Q empty (trivial quilt): max-influence {influence}"),
        "nearby": f"nearby X_N ({worst.n_nearby}): score {score} = {worst.n_nearby} / (epsilon - {influence})",
        "remote": f"remote X_R ({worst.n_remote})",
        "other": "outside the quilt's sets",
    }
    handles = [Patch(facecolor=COLOURS[k], edgecolor=_BORDERS[k], label=labels[k])
               for k in _ORDER if k != "other" or "other" in present]
    axes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8,
                frameon=False)
    scale = getattr(result, "scale", float("nan"))
    axes.set_title(f"{result.method}, epsilon {result.epsilon:g}: Laplace scale {scale:.4g} "
                   f"(sigma_max {result.sigma_max:.4g}; group DP {result.groupdp_sigma:.4g})", fontsize=10)
