r"""Fit a prior class of Bayesian networks to a data frame of discrete columns.

A Pufferfish guarantee holds for every prior in the class :math:`\Theta` and for no
other (Song, Wang and Chaudhuri, SIGMOD 2017, Definition 2.1).  A network fitted
to data is one estimate of the data's distribution; the attacker's beliefs may
be any other plausible fit.  :func:`fit_network` therefore builds :math:`\Theta` from
the data in two steps, both with pgmpy's estimators:

1. **The DAG**: given (an edge list, a networkx ``DiGraph``, a pgmpy model or a
   prior class), or learned by pgmpy's ``HillClimbSearch`` (a score such as
   BIC or BDeu) or its Chow-Liu ``TreeSearch``.
2. **The CPDs** on that DAG: pgmpy's ``BayesianEstimator`` (BDeu or K2 prior;
   the default) or ``MaximumLikelihoodEstimator``; with ``bootstrap=B``, also
   on :math:`B` bootstrap resamples of the rows, one member each, so that :math:`\Theta` holds
   B + 1 plausible fits sharing the DAG and the calibration covers the
   sampling uncertainty of the parameters.

Zero probabilities matter: a CPD entry 0 says a value is impossible, so a
secret with that value has probability 0 under the prior and no secret pair
involving it is protected (Pufferfish conditions on the secret).  With finite
data, an unseen combination is not an impossible one: the Bayesian estimator's
pseudo-counts make every entry positive, and the maximum-likelihood estimator
is for data that cover every combination.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from puffgm.core.frames import pandas_type
from puffgm.core.states import natural_order, state_label
from puffgm.core.validation import check_nonnegative_int, check_positive_finite, check_positive_int
from puffgm.exceptions import ParameterError, PriorError
from puffgm.networks.priors import NetworkPrior, PriorClass

__all__ = ["fit_network", "bin_columns", "ESTIMATORS", "PRIOR_TYPES", "STRUCTURES", "MAX_STATES"]

#: ``estimator`` values: pgmpy's BayesianEstimator and MaximumLikelihoodEstimator.
ESTIMATORS = ("bayes", "ml")
#: ``prior_type`` values of the Bayesian estimator.
PRIOR_TYPES = ("BDeu", "K2")
#: ``structure`` values; ``"hill-climb:SCORE"`` picks the score of the hill climb.
STRUCTURES = ("hill-climb", "tree")
_SCORES = ("bic-d", "aic-d", "bdeu", "k2", "bds")
#: Most distinct values a column may hold (more is a measurement or an identifier: bin or drop it).
MAX_STATES = 100


def fit_network(frame, *, dag=None, estimator: str = "bayes", prior_type: str = "BDeu",
                equivalent_sample_size: float = 5.0, bootstrap: int = 0, random_state=None,
                structure: str = "hill-climb") -> PriorClass:
    r"""Fit a prior class of Bayesian networks to a data frame: one fit, or one per bootstrap resample too.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per record, one discrete column per node (strings, integers,
        booleans, categoricals, integral floats).  Rows with a missing value
        are dropped.  A column of non-integral numbers or with more than
        :data:`MAX_STATES` values is refused: bin it first (:func:`bin_columns`).
    dag : edges, networkx.DiGraph, pgmpy model or PriorClass, optional
        The DAG, over the frame's columns (a column without edges is an
        independent node).  Default: learned from the data (``structure``).
    estimator : {"bayes", "ml"}
        pgmpy's ``BayesianEstimator`` (every entry positive) or
        ``MaximumLikelihoodEstimator`` (relative frequencies, zeros kept; an
        unseen parent configuration gets a uniform column).
    prior_type : {"BDeu", "K2"}
        The Bayesian estimator's Dirichlet prior: BDeu spreads
        ``equivalent_sample_size`` pseudo-counts over each CPD; K2 adds one
        pseudo-count per entry.
    equivalent_sample_size : float
        BDeu's pseudo-count total per node (default 5, pgmpy's default).
    bootstrap : int
        :math:`B \ge 0`: the CPDs are refitted on the same DAG on :math:`B` resamples of the
        rows drawn with replacement, and :math:`\Theta` holds the fit on all rows and
        the :math:`B` refits.  Calibration costs grow linearly with the members:
        5 to 20 is a sensible range.
    random_state : None, int or numpy.random.Generator
        Seeds the bootstrap resamples (default: fresh entropy; the notes say so).
    structure : str
        Structure learning when ``dag`` is None: ``"hill-climb"`` (pgmpy's
        ``HillClimbSearch`` with the BIC score), ``"hill-climb:SCORE"`` with
        SCORE one of ``bic-d``, ``aic-d``, ``bdeu``, ``k2``, ``bds``, or
        ``"tree"`` (Chow-Liu tree, pgmpy's ``TreeSearch``).

    Returns
    -------
    PriorClass
        Members ``"fit (all rows)"``, ``"bootstrap 1"``, ...; its notes say
        the rows and columns used, the DAG's source, the estimator and the
        resampling.

    Raises
    ------
    PriorError
        One sentence: not a data frame, no complete row, a non-discrete column
        (named), a DAG node that is not a column, or a DAG with a cycle.
    ParameterError
        A parameter outside its range (scikit-learn's message template).

    Examples
    --------
    >>> import pandas as pd
    >>> import puffgm
    >>> frame = pd.DataFrame({"rain": ["yes", "no", "no", "yes"] * 25, "wet": ["yes", "no", "no", "yes"] * 25})
    >>> theta = puffgm.fit_network(frame, dag=[("rain", "wet")])
    >>> theta.states["wet"], theta.priors[0].cpts["wet"][:, 1].round(3)   # P(wet | rain=yes): 51.25/52.5
    (('no', 'yes'), array([0.024, 0.976]))
    """
    _check_options(estimator, prior_type, equivalent_sample_size, structure)
    bootstrap = check_nonnegative_int(bootstrap, "bootstrap", "fit_network")
    data, states, notes = _discrete_frame(frame)
    if dag is None:
        edges, dag_note = _learn_dag(data, structure)
    else:
        edges, dag_note = _given_dag(dag, list(data.columns))
    notes.append(dag_note)
    notes.append(_estimator_note(estimator, prior_type, equivalent_sample_size))
    fit = _Fitter(edges, states, estimator, prior_type, equivalent_sample_size)
    members = [fit(data, "fit (all rows)")]
    if bootstrap:
        rng = np.random.default_rng(random_state)
        n = len(data)
        members += [fit(data.iloc[rng.integers(0, n, n)], f"bootstrap {b}") for b in range(1, bootstrap + 1)]
        seed = "a seeded generator" if random_state is not None else "fresh entropy (pass random_state to repeat)"
        notes.append(f"{bootstrap} bootstrap refit(s) on the same DAG, {n} rows drawn with replacement each, "
                     f"from {seed}: Theta holds {bootstrap + 1} members")
    if random_state is not None and not isinstance(random_state, np.random.Generator):
        notes.append(f"seed: random_state={random_state!r}")
    zeros = sum(m.n_zero_entries for m in members)
    if zeros:
        notes.append(f"{zeros} zero CPD entries over the members: the values they rule out are impossible under "
                     "the prior, and secrets with them are not protected (estimator='bayes' smooths them)")
    out = PriorClass(members)
    object.__setattr__(out, "notes", tuple(notes) + out.notes)
    return out


def _check_options(estimator, prior_type, ess, structure) -> None:
    for name, value, allowed in (("estimator", estimator, ESTIMATORS), ("prior_type", prior_type, PRIOR_TYPES)):
        if value not in allowed:
            raise ParameterError(f"The '{name}' parameter of fit_network must be one of "
                                 f"{', '.join(map(repr, allowed))}. Got {value!r} instead.")
    check_positive_finite(ess, "equivalent_sample_size", "fit_network")
    _structure(structure)


def _structure(structure) -> tuple:
    """(method, score) of a ``structure`` string."""
    method, _, score = str(structure).partition(":") if isinstance(structure, str) else ("", "", "")
    if method == "hill-climb" and score in ("",) + _SCORES:
        return method, score or "bic-d"
    if method == "tree" and not score:
        return method, ""
    raise ParameterError("The 'structure' parameter of fit_network must be 'hill-climb', 'hill-climb:SCORE' "
                         f"(SCORE one of {', '.join(_SCORES)}) or 'tree'. Got {structure!r} instead.")


def _estimator_note(estimator, prior_type, ess) -> str:
    if estimator == "ml":
        return "CPDs: maximum likelihood (pgmpy MaximumLikelihoodEstimator), zero counts kept as zeros"
    detail = f"equivalent sample size {float(ess):g}" if prior_type == "BDeu" else "one pseudo-count per entry"
    return f"CPDs: pgmpy BayesianEstimator, {prior_type} prior ({detail}), every entry positive"


# --------------------------------------------------------------------- data
def _discrete_frame(frame) -> tuple:
    """(frame of str states without missing rows, states per column, notes); non-discrete columns refused."""
    if pandas_type(frame) != "DataFrame":
        raise PriorError(f"fit_network takes a pandas DataFrame (one discrete column per node); got a "
                         f"{type(frame).__name__}.")
    if frame.shape[1] == 0:
        raise PriorError("The data frame has no columns.")
    if len(set(map(str, frame.columns))) != frame.shape[1]:
        raise PriorError("The data frame has duplicate column names (as strings).")
    complete = frame.dropna()
    if complete.empty:
        raise PriorError("The data frame has no row without a missing value.")
    states, cols = {}, {}
    for c in frame.columns:
        values = _column_states(c, complete[c])
        states[str(c)] = [state_label(v) for v in values]
        cols[str(c)] = complete[c].astype(object).map(state_label).astype(object)
    pd = _pandas()
    data = pd.DataFrame(cols, index=complete.index).reset_index(drop=True)
    dropped = len(frame) - len(complete)
    notes = [f"fitted to {len(data)} rows" + (f" ({dropped} with a missing value dropped)" if dropped else "")
             + f" and {data.shape[1]} columns: {', '.join(data.columns)}"]
    return data, states, notes


def _pandas():
    import pandas as pd

    return pd


def _column_states(name, column) -> list:
    """The distinct values of a discrete column in their natural order; PriorError naming a non-discrete one.

    A categorical column keeps the order of its categories (the bins of :func:`bin_columns`);
    otherwise numbers sort by value and intervals by their left edge
    (:func:`puffgm.core.states.natural_order`), the same in every process.
    """
    values = list(column.unique())
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    values = [int(v) if isinstance(v, float) and v.is_integer() else v for v in values]
    frac = [v for v in values if isinstance(v, float)]
    if frac:
        raise PriorError(f"Column {name!r} holds {len(frac)} non-integral numbers (e.g. {frac[0]!r}), not discrete "
                         f"states: bin it first (puffgm.networks.fit.bin_columns(frame, {{{name!r}: 4}})) or drop it.")
    if len(values) > MAX_STATES:
        raise PriorError(f"Column {name!r} holds {len(values)} distinct values, more than {MAX_STATES} states of a "
                         f"node: bin it (puffgm.networks.fit.bin_columns) or drop it.")
    categories = getattr(getattr(column, "cat", None), "categories", None) if str(column.dtype) == "category" \
        else None
    if categories is not None:
        seen = set(map(state_label, values))
        return [v for v in categories if state_label(v) in seen]
    return natural_order(values)


def bin_columns(frame, bins: Mapping, *, quantiles: bool = False, labels: Mapping | None = None):
    """A copy of ``frame`` with the named numeric columns cut into bins, as ordered categories.

    Parameters
    ----------
    frame : pandas.DataFrame
    bins : mapping column -> int
        The number of bins of each column to cut.
    quantiles : bool
        False (default): equal-width bins over [min, max] (``pandas.cut``; Song et al.,
        section 5.3.2); True: bins of (about) equal counts (``pandas.qcut``, duplicate
        edges dropped).
    labels : mapping column -> list of str, optional
        Names of a column's bins, lowest first (one per bin).  Default: the interval, its
        edges rounded to the fewest significant digits (at least 3) that keep them
        distinct, e.g. ``'(8, 15.5]'``.

    Returns
    -------
    pandas.DataFrame
        Each binned column is an ordered categorical whose categories are the bins from
        the lowest up, so :func:`fit_network` keeps that order; missing values stay
        missing.  Written to CSV and read back, interval labels still sort by their left
        edge (:func:`puffgm.core.states.natural_order`).

    Examples
    --------
    >>> import pandas as pd
    >>> binned = bin_columns(pd.DataFrame({"x": [0.1, 0.2, 0.9, 1.0]}), {"x": 2})
    >>> binned["x"].tolist()
    ['(0.0991, 0.55]', '(0.0991, 0.55]', '(0.55, 1]', '(0.55, 1]']
    """
    if pandas_type(frame) != "DataFrame":
        raise PriorError(f"bin_columns takes a pandas DataFrame; got a {type(frame).__name__}.")
    pd = _pandas()
    labels = dict(labels or {})
    unknown = [c for c in labels if c not in bins]
    if unknown:
        raise PriorError(f"Labels are given for column {unknown[0]!r}, which is not binned.")
    out = frame.copy()
    for col, k in dict(bins).items():
        if col not in frame.columns:
            raise PriorError(f"Column {col!r} to bin is not a column of the data frame.")
        k = check_positive_int(k, "bins", "bin_columns")
        try:
            values = pd.to_numeric(frame[col])
        except (TypeError, ValueError):
            raise PriorError(f"Column {col!r} to bin holds values that are not numbers.") from None
        if values.notna().sum() == 0:
            raise PriorError(f"Column {col!r} to bin has no value.")
        if quantiles:
            cut, edges = pd.qcut(values, k, duplicates="drop", retbins=True)
        else:
            cut, edges = pd.cut(values, k, retbins=True)
        names = _bin_labels(col, cut.cat.categories, edges, labels.get(col))
        out[col] = pd.Categorical.from_codes(cut.cat.codes, categories=names, ordered=True)
    return out


def _bin_labels(col, intervals, edges, given) -> list:
    """The names of a column's bins: the given labels (checked), or the intervals with rounded edges."""
    n = len(intervals)
    if given is not None:
        names = [str(v) for v in given] if not isinstance(given, str) else [given]
        if len(names) != n or len(set(names)) != n:
            raise PriorError(f"Column {col!r} is cut into {n} bins, so it needs {n} distinct labels; got "
                             f"{len(names)} ({', '.join(names)}).")
        return names
    points = [float(iv.left) for iv in intervals] + [float(intervals[-1].right)]
    digits, rounded = 17, points
    for digits in range(3, 18):
        rounded = [float(f"{x:.{digits}g}") for x in points]
        if all(a < b for a, b in zip(rounded[:-1], rounded[1:], strict=True)):
            break
    brackets = [("[" if iv.closed in ("left", "both") else "(", "]" if iv.closed in ("right", "both") else ")")
                for iv in intervals]
    return [f"{o}{rounded[j]:.{digits}g}, {rounded[j + 1]:.{digits}g}{c}" for j, (o, c) in enumerate(brackets)]


# ---------------------------------------------------------------------- DAG
def _given_dag(dag, columns: list) -> tuple:
    """(edges over the columns, note) of a DAG the user gives."""
    import networkx as nx

    if isinstance(dag, PriorClass):
        nodes, edges = list(dag.nodes), sorted(dag.dag.edges())
    elif isinstance(dag, NetworkPrior):
        nodes, edges = list(dag.nodes), sorted(dag.edges)
    elif isinstance(dag, nx.DiGraph):  # networkx, and every pgmpy model and DAG
        nodes, edges = [str(n) for n in dag.nodes()], [(str(a), str(b)) for a, b in dag.edges()]
    else:
        try:
            edges = [(str(a), str(b)) for a, b in dag]
        except (TypeError, ValueError):
            raise PriorError("The 'dag' of fit_network is a list of (parent, child) edges, a networkx DiGraph, a "
                             f"pgmpy model or a PriorClass; got a {type(dag).__name__}.") from None
        nodes = sorted({n for e in edges for n in e})
    missing = [n for n in nodes if n not in columns]
    if missing:
        raise PriorError(f"The DAG's node {missing[0]!r} is not a column of the data frame; columns: {columns}.")
    g = nx.DiGraph(edges)
    if not nx.is_directed_acyclic_graph(g):
        raise PriorError(f"The given graph has a directed cycle: {nx.find_cycle(g)}.")
    alone = [c for c in columns if c not in g]
    note = f"DAG given: {len(edges)} edge(s)"
    return edges, note + (f"; columns without an edge (independent nodes): {', '.join(alone)}" if alone else "")


def _learn_dag(data, structure) -> tuple:
    """(edges, note) learned by pgmpy's hill climb or Chow-Liu tree search, the same in every process.

    The columns are searched in sorted order, and the hill climb scores its candidate moves in
    sorted order, so that of two moves with the same score change (adding X -> Y or Y -> X to
    an empty graph changes a score-equivalent score equally) the first in that order wins,
    whatever the hash seed: pgmpy draws the candidates from a ``set``, whose iteration order
    depends on ``PYTHONHASHSEED``.  The search itself draws no random numbers.
    """
    method, score = _structure(structure)
    data = data[sorted(data.columns)]
    with warnings.catch_warnings():  # pgmpy 1.1 warns about its own module moves on import
        warnings.simplefilter("ignore", FutureWarning)
        if method == "tree":
            from pgmpy.estimators import TreeSearch

            learned = TreeSearch(data, n_jobs=1).estimate(estimator_type="chow-liu", show_progress=False)
            return _edges(learned), "DAG learned: Chow-Liu tree (pgmpy TreeSearch)"
        try:
            from pgmpy.causal_discovery import HillClimbSearch
        except ImportError:  # pragma: no cover - pgmpy before 1.1
            from pgmpy.estimators import HillClimbSearch as OldSearch

            old = OldSearch(data)
            _sorted_moves(old, "_legal_operations")
            learned = old.estimate(scoring_method=score, show_progress=False)
        else:
            search = HillClimbSearch(scoring_method=score, return_type="dag", show_progress=False)
            _sorted_moves(search, "_legal_operations_dag")
            learned = search.fit(data).causal_graph_
    edges = _edges(learned)
    return edges, f"DAG learned: hill climb (pgmpy HillClimbSearch, score {score}), {len(edges)} edge(s)"


def _sorted_moves(search, method: str) -> None:
    """Make ``search`` offer its candidate moves in sorted order (pgmpy iterates a set of them)."""
    moves = getattr(search, method)

    def in_order(*args, **kwargs):
        return iter(sorted(moves(*args, **kwargs), key=lambda move: (move[0][0], tuple(map(str, move[0][1])))))

    setattr(search, method, in_order)


def _edges(graph) -> list:
    return sorted((str(a), str(b)) for a, b in graph.edges())


# --------------------------------------------------------------------- CPDs
class _Fitter:
    """Fits the CPDs of one DAG with one estimator; called once per member (all rows, each resample)."""

    def __init__(self, edges, states, estimator, prior_type, ess):
        self.edges, self.states = edges, states
        self.estimator, self.prior_type, self.ess = estimator, prior_type, float(ess)

    def __call__(self, data, name: str) -> NetworkPrior:
        from pgmpy.base import DAG

        dag = DAG()
        dag.add_nodes_from(self.states)
        dag.add_edges_from(self.edges)
        parents, cpds = {}, {}
        for cpd in self._estimate(dag, data.reset_index(drop=True)):
            node = str(cpd.variable)
            parents[node] = [str(p) for p in cpd.variables[1:]]
            cpds[node] = _check_cpd(cpd, self.states)
        return NetworkPrior(list(self.states), self.states, parents, cpds, name=name)

    def _estimate(self, dag, data) -> list:
        """pgmpy's TabularCPDs (pgmpy.parameter_estimator; pgmpy.estimators before it existed)."""
        bayes = {"prior_type": self.prior_type, "equivalent_sample_size": self.ess}
        try:
            from pgmpy.parameter_estimator import DiscreteBayesianEstimator, DiscreteMLE
        except ImportError:  # pragma: no cover - pgmpy 1.1 releases without the module
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                from pgmpy.estimators import BayesianEstimator, MaximumLikelihoodEstimator

                if self.estimator == "ml":
                    return MaximumLikelihoodEstimator(dag, data, state_names=self.states).get_parameters()
                return BayesianEstimator(dag, data, state_names=self.states).get_parameters(**bayes)
        if self.estimator == "ml":
            return DiscreteMLE(state_names=self.states).fit(dag, data).parameters_
        return DiscreteBayesianEstimator(state_names=self.states, **bayes).fit(dag, data).parameters_


def _check_cpd(cpd, states: dict) -> np.ndarray:
    """The CPD values in the full state order (pgmpy's state_names checked against ours)."""
    for v in cpd.variables:
        if [str(s) for s in cpd.state_names[v]] != states[str(v)]:
            raise PriorError(f"pgmpy returned the states {cpd.state_names[v]} for {v!r}, expected {states[str(v)]}.")
    values = np.asarray(cpd.get_values(), dtype=float)
    if not np.all(np.isfinite(values)):
        raise PriorError(f"The fitted CPD of {cpd.variable!r} has a NaN entry.")
    return values

