r"""Linear-Gaussian Bayesian networks with region secrets: priors, Markov quilts, MQM, a(b) curves.

A linear-Gaussian network has, for every node :math:`v` with parents :math:`\mathrm{pa}(v)`,

$$
x_v = c_v + \sum_{u \in \mathrm{pa}(v)} \beta_{v,u}\, x_u + e_v, \qquad e_v \sim N(0, s_v^2) \text{ independent},
$$

so :math:`x = (I - B)^{-1} (c + e)` is jointly Gaussian with mean :math:`(I - B)^{-1} c` and
covariance :math:`(I - B)^{-1} \operatorname{diag}(s^2) (I - B)^{-\top}`.  Region secrets (Bai et al.,
Example 6.2) need a bounded support, so the prior is this Gaussian truncated
to a box :math:`\prod_v [lo_v, hi_v]`; the secrets are :math:`s_v(r) = \{x_v \in [r, r + \delta]\}`.

Markov quilts under truncation
------------------------------
The truncated density is :math:`\prod_v p(x_v \mid \mathrm{pa}(v))\, 1[lo_v \le x_v \le hi_v]`: a Gibbs
factorisation over the *moral* graph, but not a Bayesian network with the same
DAG -- truncating a collider couples its parents (:math:`A \to C \leftarrow B`: :math:`A` and :math:`B` are
independent in the Gaussian, dependent once :math:`C` is truncated).  So d-separation
in the DAG does not give conditional independence under the truncated prior;
separation in the moral graph does (global Markov property of the
factorisation).  The quilts here are therefore moral-graph separators: for a quilt
:math:`X_Q` of :math:`X_v`, :math:`X_N` is the connected component of :math:`v` in the moral graph
minus :math:`Q` and :math:`X_R` the rest, so :math:`X_R` is independent of :math:`X_N` given :math:`X_Q` under the
truncated prior.  Then :math:`x_N \mid x_Q` is the untruncated Gaussian conditional
restricted to the box, and the max-influence :math:`e(X_Q \mid X_v)` (Song et al.,
Definition 4.1, with densities) is the certified leakage of
:mod:`puffgm.gaussian.leakage` with conditioning set :math:`Q` and high-influence set :math:`N`.

The Markov Quilt Mechanism (Song et al., Algorithm 2, Theorem 4.3) then adds
Laplace noise of scale :math:`L \max_v \min_Q \operatorname{card}(X_N) / (\epsilon - e(X_Q \mid X_v))` to
an :math:`L`-Lipschitz query, where :math:`L` bounds the change of the query when one node's
value moves anywhere in its box.  The :math:`a(b)`-influence curve takes
:math:`H = X_N`, :math:`L = X_Q \cup X_R` (Bai et al., Definition 7), as for discrete networks.

File format (JSON, ``"format": "puffgm-linear-gaussian"``)::

    {"format": "puffgm-linear-gaussian", "name": "sensors",
     "bounds": [-5, 5], "delta": 0.25,
     "nodes": {
        "A": {"intercept": 0.0, "variance": 1.0},
        "B": {"parents": ["A"], "coefficients": [0.8], "intercept": 0.5, "variance": 0.5},
        "C": {"parents": ["B"], "coefficients": [0.6], "variance": 0.7, "bounds": [-4, 6]}}}

``bounds`` (global, or per node) is the truncation box; ``delta`` the region
width.  Validation is strict: positive finite variances, finite numbers, known
parents, one coefficient per parent, no cycles, bounds with upper > lower and
room for two disjoint regions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
import os
import time
from collections.abc import Iterable

import numpy as np

from puffgm.core.validation import check_positive_finite, is_inline_json, read_json_argument, saved_members
from puffgm.core.witness import Witness
from puffgm.exceptions import ParameterError, PriorError
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions

__all__ = [
    "gaussian_class_to_json",
    "gaussian_class_from_json",
    "FORMAT",
    "LinearGaussianPrior",
    "GaussianPriorClass",
    "load_linear_gaussian",
    "load_gaussian_class",
    "is_gaussian_prior",
    "is_gaussian_spec",
    "gaussian_quilts",
    "gaussian_calibrate",
    "gaussian_influence_curve",
]

FORMAT = "puffgm-linear-gaussian"
THEOREM_MQM = ("Song, Wang and Chaudhuri 2017, Theorem 4.3 (Markov Quilt Mechanism) with moral-graph quilts "
               "and certified Gaussian region-secret max-influence")
THEOREM_CURVE = ("Bai-He-Gu-Kifer-Maeng Definition 7 via moral-graph Markov quilts; certified truncated-Gaussian "
                 "leakage (puffgm.gaussian.leakage)")
EXHAUSTIVE_MAX_NODES = 6


def _num(x, what):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(float(x)):
        raise PriorError(f"{what} must be a finite number. Got {x!r} instead.")
    return float(x)


class LinearGaussianPrior:
    """A linear-Gaussian Bayesian network truncated to a box, with region secrets of width ``delta``.

    Parameters
    ----------
    nodes : sequence of str
    parents : mapping node -> sequence of parent names
    coefficients : mapping node -> sequence of floats (one per parent)
    intercepts, variances : mapping node -> float (variance > 0)
    bounds : (lower, upper) pair for every node, or mapping node -> (lower, upper)
        The truncation box.
    delta : float
        The region width.
    name : str
    """

    def __init__(self, nodes, parents, coefficients, intercepts, variances, bounds, delta, name="network"):
        import networkx as nx

        nodes = [str(v) for v in nodes]
        if not nodes:
            raise PriorError("A linear-Gaussian network needs at least one node.")
        if len(set(nodes)) != len(nodes):
            raise PriorError("Node names of a linear-Gaussian network must be unique.")
        known = set(nodes)
        self.parents = {}
        self.coefficients = {}
        for v in nodes:
            pa = [str(u) for u in parents.get(v, ())]
            for u in pa:
                if u not in known:
                    raise PriorError(f"Node {v!r} has unknown parent {u!r}.")
                if u == v:
                    raise PriorError(f"Node {v!r} cannot be its own parent.")
            if len(set(pa)) != len(pa):
                raise PriorError(f"Node {v!r} lists a parent twice.")
            co = list(coefficients.get(v, ()))
            if len(co) != len(pa):
                raise PriorError(f"Node {v!r} has {len(pa)} parents but {len(co)} coefficients.")
            self.parents[v] = tuple(pa)
            self.coefficients[v] = tuple(_num(c, f"The coefficient of node {v!r}") for c in co)
        dag = nx.DiGraph()
        dag.add_nodes_from(nodes)
        dag.add_edges_from((u, v) for v in nodes for u in self.parents[v])
        if not nx.is_directed_acyclic_graph(dag):
            cyc = nx.find_cycle(dag)
            raise PriorError(f"The network has a cycle through {cyc[0][0]!r}: a Bayesian network must be acyclic.")
        self.dag = dag
        self.nodes = tuple(nodes)
        self.intercepts = {v: _num(intercepts.get(v, 0.0), f"The intercept of node {v!r}") for v in nodes}
        self.variances = {}
        for v in nodes:
            if v not in variances:
                raise PriorError(f"Node {v!r} has no variance.")
            s2 = _num(variances[v], f"The variance of node {v!r}")
            if not s2 > 0:
                raise PriorError(f"The variance of node {v!r} must be > 0. Got {s2!r} instead.")
            self.variances[v] = s2
        lower, upper = _bounds_map(bounds, nodes)
        self.lower = np.array([_num(lower[v], f"The lower bound of node {v!r}") for v in nodes])
        self.upper = np.array([_num(upper[v], f"The upper bound of node {v!r}") for v in nodes])
        for v, lo, hi in zip(nodes, self.lower, self.upper, strict=True):
            if not hi > lo:
                raise PriorError(f"The bounds of node {v!r} must satisfy upper > lower. Got [{lo:g}, {hi:g}] instead.")
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not math.isfinite(delta) or delta <= 0:
            raise ParameterError(f"The region width 'delta' must be a finite number > 0. Got {delta!r} instead.")
        self.delta = float(delta)
        for v, lo, hi in zip(nodes, self.lower, self.upper, strict=True):
            if hi - lo < 2 * self.delta:
                raise PriorError(f"The box [{lo:g}, {hi:g}] of node {v!r} is too short for two disjoint regions "
                                 f"of width {self.delta:g}.")
        self.name = str(name)
        # joint Gaussian: x = (I - B)^-1 (c + e)
        n = len(nodes)
        idx = {v: k for k, v in enumerate(nodes)}
        Bm = np.zeros((n, n))
        for v in nodes:
            for u, c in zip(self.parents[v], self.coefficients[v], strict=True):
                Bm[idx[v], idx[u]] = c
        A = np.linalg.inv(np.eye(n) - Bm)  # I - B is unit triangular up to a permutation
        self.mean = A @ np.array([self.intercepts[v] for v in nodes])
        self.cov = A @ np.diag([self.variances[v] for v in nodes]) @ A.T
        self.cov = (self.cov + self.cov.T) / 2
        if not (np.all(np.isfinite(self.mean)) and np.all(np.isfinite(self.cov))):
            raise PriorError("The joint Gaussian of the network overflows (coefficients too large).")
        self._model = None

    # -------------------------------------------------------------- basics
    def __repr__(self):
        return f"LinearGaussianPrior({self.name!r}, {len(self.nodes)} nodes, delta={self.delta:g})"

    @property
    def fingerprint(self) -> str:
        blob = repr((self.nodes, sorted(self.parents.items()), sorted(self.coefficients.items()),
                     sorted(self.intercepts.items()), sorted(self.variances.items()),
                     self.lower.tolist(), self.upper.tolist(), self.delta))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def region_model(self) -> GaussianRegionModel:
        """The truncated joint Gaussian as a :class:`GaussianRegionModel` (built once)."""
        if self._model is None:
            # the b >= 3 pinned-regime engines are off here: MQM and the quilt curves scan many quilts
            self._model = GaussianRegionModel(self.cov, self.lower, self.upper, self.delta, self.mean,
                                              options=ModelOptions(pinned_engines=False))
        return self._model

    def moral_graph(self):
        """The moral graph of the network (``networkx.moral_graph``: parents married, directions dropped)."""
        import networkx as nx

        return nx.moral_graph(self.dag)

    def to_dict(self) -> dict:
        """The JSON file format (see the module docstring)."""
        return {
            "format": FORMAT, "name": self.name, "delta": self.delta,
            "nodes": {v: {"parents": list(self.parents[v]), "coefficients": list(self.coefficients[v]),
                          "intercept": self.intercepts[v], "variance": self.variances[v],
                          "bounds": [float(self.lower[k]), float(self.upper[k])]}
                      for k, v in enumerate(self.nodes)},
        }

    def to_pgmpy(self):
        """The pgmpy ``LinearGaussianBayesianNetwork`` (imports pgmpy)."""
        from pgmpy.factors.continuous import LinearGaussianCPD
        from pgmpy.models import LinearGaussianBayesianNetwork

        m = LinearGaussianBayesianNetwork()
        m.add_nodes_from(self.nodes)
        m.add_edges_from((u, v) for v in self.nodes for u in self.parents[v])
        cpds = [LinearGaussianCPD(v, [self.intercepts[v], *self.coefficients[v]], math.sqrt(self.variances[v]),
                                  list(self.parents[v])) for v in self.nodes]
        m.add_cpds(*cpds)
        return m

    @classmethod
    def from_dict(cls, d, label="the network") -> LinearGaussianPrior:
        if not isinstance(d, dict):
            raise PriorError(f"{label} must be a JSON object.")
        if d.get("format") != FORMAT:
            raise PriorError(f"{label} is not a linear-Gaussian network: its 'format' must be {FORMAT!r}.")
        allowed = {"format", "name", "nodes", "bounds", "delta"}
        extra = sorted(set(d) - allowed)
        if extra:
            raise PriorError(f"{label} has an unknown key {extra[0]!r}.")
        nodes = d.get("nodes")
        if not isinstance(nodes, dict) or not nodes:
            raise PriorError(f"{label} needs a non-empty 'nodes' object.")
        if "delta" not in d:
            raise PriorError(f"{label} needs the region width 'delta'.")
        default = d.get("bounds")
        parents, coefs, inter, var, box = {}, {}, {}, {}, {}
        node_keys = {"parents", "coefficients", "intercept", "variance", "bounds"}
        for v, spec in nodes.items():
            if not isinstance(spec, dict):
                raise PriorError(f"Node {v!r} of {label} must be a JSON object.")
            bad = sorted(set(spec) - node_keys)
            if bad:
                raise PriorError(f"Node {v!r} of {label} has an unknown key {bad[0]!r}.")
            pa = spec.get("parents", [])
            co = spec.get("coefficients", [])
            if not isinstance(pa, list) or not isinstance(co, list):
                raise PriorError(f"Node {v!r}: 'parents' and 'coefficients' must be lists.")
            parents[v], coefs[v] = pa, co
            inter[v] = spec.get("intercept", 0.0)
            if "variance" not in spec:
                raise PriorError(f"Node {v!r} of {label} has no 'variance'.")
            var[v] = spec["variance"]
            b = spec.get("bounds", default)
            if not (isinstance(b, list) and len(b) == 2):
                raise PriorError(f"Node {v!r} of {label} needs 'bounds' [lower, upper] (per node or global).")
            box[v] = tuple(b)
        return cls(list(nodes), parents, coefs, inter, var, box, d["delta"], name=d.get("name", "network"))

    @classmethod
    def from_pgmpy(cls, model, bounds, delta, name=None) -> LinearGaussianPrior:
        """From a pgmpy ``LinearGaussianBayesianNetwork``; ``bounds`` is (lower, upper) or node -> (lower, upper)."""
        nodes = [str(v) for v in model.nodes()]
        parents, coefs, inter, var = {}, {}, {}, {}
        for v in model.nodes():
            cpd = model.get_cpds(v)
            if cpd is None:
                raise PriorError(f"Node {v!r} of the pgmpy network has no CPD.")
            beta = list(np.asarray(cpd.beta, float).ravel())
            ev = [str(u) for u in (cpd.evidence or [])]
            if len(beta) != len(ev) + 1:
                raise PriorError(f"The CPD of node {v!r} has {len(beta)} coefficients for {len(ev)} parents.")
            parents[str(v)], coefs[str(v)], inter[str(v)] = ev, beta[1:], beta[0]
            std = float(cpd.std)
            var[str(v)] = std * std
        return cls(nodes, parents, coefs, inter, var, bounds, delta, name=name or "pgmpy")


def _bounds_map(bounds, nodes):
    if isinstance(bounds, dict):
        missing = [v for v in nodes if v not in bounds]
        if missing:
            raise ParameterError(f"The 'bounds' mapping has no interval for node {missing[0]!r}.")
        return ({v: bounds[v][0] for v in nodes}, {v: bounds[v][1] for v in nodes})
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ParameterError("The 'bounds' parameter must be a (lower, upper) pair or a mapping node -> "
                             "pair.") from None
    return ({v: lo for v in nodes}, {v: hi for v in nodes})


class GaussianPriorClass:
    r"""A finite class :math:`\Theta` of linear-Gaussian priors over the same nodes, box and region width."""

    def __init__(self, priors: Iterable[LinearGaussianPrior]):
        priors = list(priors)
        if not priors:
            raise PriorError("A Gaussian prior class needs at least one prior.")
        first = priors[0]
        for p in priors[1:]:
            if set(p.nodes) != set(first.nodes):
                raise PriorError("Every prior of a Gaussian class must have the same nodes.")
            if p.delta != first.delta:
                raise PriorError("Every prior of a Gaussian class must use the same region width delta.")
            order = [p.nodes.index(v) for v in first.nodes]
            if not (np.array_equal(p.lower[order], first.lower) and np.array_equal(p.upper[order], first.upper)):
                raise PriorError("Every prior of a Gaussian class must use the same bounds (the secrets must agree).")
        self.priors = tuple(priors)
        self.nodes = first.nodes
        self.notes = ()

    def __len__(self):
        return len(self.priors)

    def __repr__(self):
        return f"GaussianPriorClass({len(self.priors)} priors, {len(self.nodes)} nodes)"

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256("|".join(p.fingerprint for p in self.priors).encode()).hexdigest()[:16]


# ------------------------------------------------------------------ loading and dispatch
def is_gaussian_spec(spec) -> bool:
    """True for a JSON file path or inline JSON text whose 'format' is the linear-Gaussian format (cheap, no pgmpy)."""
    if is_inline_json(spec):
        try:
            return json.loads(spec).get("format") == FORMAT
        except (ValueError, AttributeError):
            return False
    if not isinstance(spec, (str, os.PathLike)) or not str(spec).lower().endswith(".json"):
        return False
    try:
        with open(spec, encoding="utf-8") as fh:
            head = fh.read(1 << 20)
        return json.loads(head).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def is_gaussian_prior(prior) -> bool:
    """True if ``prior`` (or every item of a list) is a linear-Gaussian prior, class, file or pgmpy model."""
    if isinstance(prior, (LinearGaussianPrior, GaussianPriorClass)):
        return True
    if type(prior).__name__ == "LinearGaussianBayesianNetwork":
        return True
    if isinstance(prior, dict):
        return prior.get("format") == FORMAT
    if isinstance(prior, (list, tuple)) and prior:
        return all(is_gaussian_prior(p) for p in prior)
    return is_gaussian_spec(prior)


def load_linear_gaussian(spec, *, bounds=None, delta=None) -> LinearGaussianPrior:
    """One prior from a JSON path, a dict, a :class:`LinearGaussianPrior` or a pgmpy model (+ bounds, delta)."""
    if isinstance(spec, LinearGaussianPrior):
        return spec
    if type(spec).__name__ == "LinearGaussianBayesianNetwork":
        if bounds is None or delta is None:
            raise ParameterError("A pgmpy LinearGaussianBayesianNetwork needs 'bounds' and 'delta' for region secrets.")
        return LinearGaussianPrior.from_pgmpy(spec, bounds, delta)
    if isinstance(spec, dict):
        return LinearGaussianPrior.from_dict(spec)
    if is_inline_json(spec):
        d, label = read_json_argument(spec, "linear-Gaussian spec", PriorError)
        return LinearGaussianPrior.from_dict(d, label=label)
    if isinstance(spec, (str, os.PathLike)):
        try:
            with open(spec, encoding="utf-8") as fh:
                d = json.load(fh)
        except OSError as exc:
            raise PriorError(f"Cannot read {str(spec)!r}: {exc.strerror or exc}.") from None
        except ValueError as exc:
            raise PriorError(f"{str(spec)!r} is not valid JSON ({exc}).") from None
        return LinearGaussianPrior.from_dict(d, label=repr(str(spec)))
    raise PriorError(f"Cannot read a linear-Gaussian prior from {type(spec).__name__}.")


def load_gaussian_class(specs, *, bounds=None, delta=None) -> GaussianPriorClass:
    """A :class:`GaussianPriorClass` from one spec or a list of specs (see :func:`load_linear_gaussian`)."""
    if isinstance(specs, GaussianPriorClass):
        return specs
    if not isinstance(specs, (list, tuple)):
        specs = [specs]
    members: list = []
    for s in specs:
        if isinstance(s, GaussianPriorClass):
            members.extend(s.priors)
        else:
            members.append(load_linear_gaussian(s, bounds=bounds, delta=delta))
    return GaussianPriorClass(members)


# ------------------------------------------------------------------ quilts and influence
def gaussian_quilts(prior: LinearGaussianPrior, node, *, exhaustive=None):
    """Candidate moral-graph quilts of ``node``: list of (Q, N, R) frozensets, trivial quilt first.

    Exhaustive (every subset of the other nodes) for at most ``EXHAUSTIVE_MAX_NODES`` nodes,
    otherwise the distance layers of the moral graph around ``node`` (each layer is a separator).
    """
    import networkx as nx

    g = prior.moral_graph()
    if node not in g:
        raise ParameterError(f"{node!r} is not a node of the prior.")
    others = [v for v in prior.nodes if v != node]
    if exhaustive is None:
        exhaustive = len(prior.nodes) <= EXHAUSTIVE_MAX_NODES
    if exhaustive:
        qs = [frozenset(c) for k in range(len(others) + 1) for c in itertools.combinations(others, k)]
    else:
        dist = nx.single_source_shortest_path_length(g, node)
        layers: dict = {}
        for v, d in dist.items():
            if d > 0:
                layers.setdefault(d, set()).add(v)
        qs = [frozenset()] + [frozenset(layers[d]) for d in sorted(layers)]
    out, seen = [], set()
    for q in qs:
        sub = g.subgraph([v for v in prior.nodes if v not in q])
        nearby = frozenset(nx.node_connected_component(sub, node))
        remote = frozenset(prior.nodes) - q - nearby
        # a quilt node with no path to the nearby set outside Q is useless: drop duplicates by (N, R)
        key = (q, nearby)
        if key in seen:
            continue
        seen.add(key)
        out.append((q, nearby, remote))
    return out


class _Engine:
    """Cached max-influence e(X_Q | X_v) of one prior."""

    def __init__(self, prior: LinearGaussianPrior):
        self.prior = prior
        self.idx = {v: k for k, v in enumerate(prior.nodes)}
        self.cache: dict = {}
        self.evaluations = 0

    def influence(self, node, quilt, nearby) -> float:
        key = (node, quilt, nearby)
        if key not in self.cache:
            if not quilt:
                val = 0.0  # X_R (other components) is independent of X_N under the truncated prior
            else:
                self.evaluations += 1
                res = self.prior.region_model.leakage(
                    self.idx[node], [self.idx[u] for u in quilt], [self.idx[u] for u in nearby if u != node])
                val = res.value
            self.cache[key] = val
        return self.cache[key]


def _resolve(pc, protected, secrets):
    """Protected nodes from ``protected`` or a :class:`puffgm.networks.secrets.SecretSpec` (nodes only)."""
    if secrets is None:
        return _protected(pc, protected)
    if protected is not None:
        raise ParameterError("Give either 'secrets' or 'protected', not both.")
    if getattr(secrets, "pairs", None):
        raise ParameterError("Value pairs do not apply to Gaussian region secrets; give protected nodes only.")
    return list(secrets.protected_nodes(pc))


def _protected(pc, protected):
    if protected is None:
        return list(pc.nodes)
    protected = [str(v) for v in ([protected] if isinstance(protected, str) else protected)]
    for v in protected:
        if v not in pc.nodes:
            raise ParameterError(f"{v!r} is not a node of the prior.")
    if not protected:
        raise ParameterError("The protected set is empty.")
    return protected


def _secrets_key(pc: GaussianPriorClass, nodes) -> str:
    """The identifier of the region secrets (``details["secrets"]``, part of a release's composition key)."""
    return f"gaussian-regions|delta={pc.priors[0].delta!r}|protected={','.join(nodes)}"


def gaussian_calibrate(prior, *, epsilon, lipschitz=1.0, protected=None, secrets=None, bounds=None, delta=None,
                       exhaustive=None):
    r"""Markov Quilt Mechanism calibration for linear-Gaussian priors with region secrets.

    $$
    \sigma_{\max} = \max_{\theta, v} \min_Q \frac{\mathrm{card}(X_N)}{\epsilon - e_\theta(X_Q \mid X_v)}
    $$

    over priors :math:`\theta`, protected nodes :math:`v` and moral-graph quilts :math:`Q`, with :math:`e`
    certified (:mod:`puffgm.gaussian.leakage`).  Returns a
    :class:`puffgm.core.results.CalibrationResult` (method ``"mqm-gaussian"``) that records the
    options given (those not None: ``result.options``, part of the composition key of its releases)
    and the DAG of the prior whose node needs the most noise (``result.graph``, for ``result.plot()``).

    Examples
    --------
    >>> from puffgm.gaussian.networks import LinearGaussianPrior, gaussian_calibrate
    >>> p = LinearGaussianPrior(["A", "B"], {"B": ["A"]}, {"B": [0.5]}, {}, {"A": 1.0, "B": 1.0}, (-3, 3),
    ...                         delta=0.5)
    >>> res = gaussian_calibrate(p, epsilon=10.0)
    >>> res.sigma_max <= res.groupdp_sigma
    True
    """
    import networkx as nx

    from puffgm.core.results import QuiltChoice, QuiltGraph
    from puffgm.mechanisms.mqm_loop import best_quilt, run_mqm, search_nodes

    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate")
    pc = load_gaussian_class(prior, bounds=bounds, delta=delta)
    nodes = _resolve(pc, protected, secrets)
    t0 = time.perf_counter()
    evaluations = 0

    def search_prior(t: int, theta: LinearGaussianPrior) -> dict:
        nonlocal evaluations
        eng = _Engine(theta)
        order = theta.nodes.index

        def best_of(v):
            def choice(q, nb, rm, e, score):
                return QuiltChoice(node=v, quilt=tuple(sorted(q, key=order)), nearby=tuple(sorted(nb, key=order)),
                                   remote=tuple(sorted(rm, key=order)), max_influence=e, score=score,
                                   witness=Witness(prior=0, node=v))

            cands = sorted(gaussian_quilts(theta, v, exhaustive=exhaustive), key=lambda c: (len(c[1]), len(c[0])))
            return best_quilt(cands, lambda q, nb: eng.influence(v, q, nb), choice, epsilon=epsilon)

        mine = search_nodes(nodes, best_of)
        evaluations += eng.evaluations
        return mine

    largest = max(max(len(c) for c in nx.weakly_connected_components(p.dag)) for p in pc.priors)
    outcome = run_mqm(pc.priors, nodes, search_prior, epsilon=epsilon, largest_group=largest)
    worst = outcome.worst
    notes = [f"region secrets {{x_v in [r, r + delta]}} with delta = {pc.priors[0].delta:g}; the prior is truncated "
             "to its box and the Lipschitz constant is for one node moving anywhere in its box"]
    if outcome.no_gain:
        notes.append("the quilt search found no gain over group DP for the worst node")
    return outcome.result(
        epsilon=epsilon, lipschitz=lipschitz, method="mqm-gaussian", n_nodes=len(pc.nodes),
        fingerprint=pc.fingerprint, theorem=THEOREM_MQM, notes=tuple(notes),
        details={"quilt_family": "moral-graph " + ("exhaustive" if (exhaustive if exhaustive is not None else
                                                                     len(pc.nodes) <= EXHAUSTIVE_MAX_NODES)
                                                    else "distance layers"),
                 "n_priors": len(pc.priors), "per_prior_sigma": outcome.per_prior, "protected": len(nodes),
                 "influence_evaluations": evaluations, "delta": pc.priors[0].delta,
                 "secrets": _secrets_key(pc, nodes),
                 "seconds": time.perf_counter() - t0},
        # the DAG of the prior whose node needs the most noise, for result.plot()
        graph=QuiltGraph("dag", nodes=tuple(pc.nodes), edges=tuple(pc.priors[worst.prior].dag.edges)),
        options={name: value for name, value in (("protected", protected), ("secrets", secrets), ("bounds", bounds),
                                                 ("delta", delta), ("exhaustive", exhaustive)) if value is not None},
    )


def gaussian_influence_curve(prior, max_b=None, *, protected=None, secrets=None, bounds=None, delta=None,
                             exhaustive=None):
    r""":math:`a(b)`-influence curve of a linear-Gaussian prior class with region secrets.

    :math:`a_{\theta,v}(b) = \min \{ e_\theta(X_Q \mid X_v) : \mathrm{card}(X_N) \le b \}` over moral-graph quilts
    :math:`Q`,
    :math:`a(b) = \max_{\theta, v} a_{\theta,v}(b)` (each prior its own split, as for discrete networks).
    """
    from puffgm.core.curve import InfluenceCurve
    from puffgm.core.validation import check_positive_int

    pc = load_gaussian_class(prior, bounds=bounds, delta=delta)
    n = len(pc.nodes)
    B = n if max_b is None else min(check_positive_int(max_b, "max_b", "influence_curve"), n)
    nodes = _resolve(pc, protected, secrets)
    t0 = time.perf_counter()
    a = np.full(B, -math.inf)
    wit = [None] * B
    for theta in pc.priors:
        eng = _Engine(theta)
        for v in nodes:
            row = np.full(B, math.inf)
            rw: list = [None] * B
            for q, nb, _ in gaussian_quilts(theta, v, exhaustive=exhaustive):
                b = len(nb)
                if b > B:
                    continue
                e = eng.influence(v, q, nb)
                if e < row[b - 1]:
                    row[b - 1], rw[b - 1] = e, (v, tuple(sorted(q, key=theta.nodes.index)))
            for k in range(1, B):
                if row[k] > row[k - 1]:
                    row[k], rw[k] = row[k - 1], rw[k - 1]
            for k in range(B):
                if row[k] > a[k]:
                    a[k], wit[k] = row[k], rw[k]
    return InfluenceCurve(b=range(1, B + 1), a=a.tolist(), witnesses=tuple(wit), n_entries=n,
                          method="gaussian-quilts", fingerprint=pc.fingerprint, theorem=THEOREM_CURVE,
                          notes=("certified upper bounds of the truncated-Gaussian leakage of region secrets "
                                 f"(delta = {pc.priors[0].delta:g}); quilts separate in the moral graph",),
                          details={"seconds": time.perf_counter() - t0, "n_priors": len(pc.priors),
                                   "secrets": _secrets_key(pc, nodes)})


def gaussian_class_to_json(obj: GaussianPriorClass) -> dict:
    """The body of a saved class of linear-Gaussian networks (kind ``"linear-gaussian"``, :mod:`puffgm.api.persist`).

    ``"members"``: one ``puffgm-linear-gaussian`` object per member (:meth:`LinearGaussianPrior.to_dict`).
    """
    return {"members": [p.to_dict() for p in obj.priors]}


def gaussian_class_from_json(data: dict, label: str) -> GaussianPriorClass:
    """The class of linear-Gaussian networks :func:`gaussian_class_to_json` wrote, every member validated."""
    return GaussianPriorClass(LinearGaussianPrior.from_dict(m, label=f"member {j} of {label}")
                              for j, m in enumerate(saved_members(data, label), start=1))
