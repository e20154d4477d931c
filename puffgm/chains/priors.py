r"""Markov-chain priors: the class :math:`\Theta` of chains :math:`X_1 \to X_2 \to \cdots \to X_T`.

Song, Wang and Chaudhuri (section 4.4) model a trace of :math:`T` records as a
time-homogeneous Markov chain: each :math:`\theta \in \Theta` is a pair :math:`(q_\theta, P_\theta)`
of an initial distribution of :math:`X_1` and a :math:`k \times k` row-stochastic transition matrix.
A :class:`ChainPriorClass` is a finite family of such pairs sharing the length
:math:`T` and the state names; the initial distribution of a member is

* a given probability vector :math:`q`,
* ``"stationary"``: the stationary distribution :math:`\pi` of :math:`P` (the chain is in a
  steady state; :math:`\pi` must be unique), or
* ``"any"``: every initial distribution of the simplex :math:`\Delta_k`
  (:math:`\Theta = \Delta_k \times \{P\}`, appendix C.4).

Validation follows the network priors (:mod:`puffgm.networks.priors`): a row of :math:`P` (or
an initial vector) whose sum is off 1 by more than ``1e-6`` is rejected,
smaller slips are renormalised and recorded in :attr:`ChainPriorClass.notes`;
entries must be finite and non-negative; zero probabilities are legitimate
and handled exactly by every calibration.

Chains can be built from matrices, from a ``pgmpy.models.MarkovChain``
(:meth:`ChainPriorClass.from_pgmpy`), or fitted to observed state sequences
with the additive smoothing of Bai et al., appendix D.2
(:func:`fit_chain`, also :meth:`ChainPriorClass.fit`; lists, arrays, pandas Series and
data frames, gaps split runs).  Every member with a fixed initial
distribution unrolls to a pgmpy ``DiscreteBayesianNetwork`` :math:`X_1 \to \cdots \to X_T`
(:meth:`ChainPrior.to_pgmpy`), so the general Bayesian-network machinery
applies to it.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from puffgm.core.states import match_state, natural_order, state_label
from puffgm.core.validation import saved_members
from puffgm.exceptions import PriorError

__all__ = [
    "chain_class_to_json", "chain_class_from_json",
    "ChainPrior", "ChainPriorClass", "InfiniteChainClass", "ROW_TOLERANCE", "SMOOTHING_TAU", "check_length",
    "check_transition_matrix", "closed_classes", "gth_stationary", "node_name", "smooth_transition",
    "stationary_distribution", "fit_chain",
]

#: Largest deviation of a row sum from 1 that is renormalised instead of rejected.
ROW_TOLERANCE = 1e-6
#: Deviations below this are floating-point noise and are renormalised silently.
_SILENT = 1e-12
#: Additive smoothing of zero transition probabilities (Bai et al., appendix D.2).
SMOOTHING_TAU = 1e-5
_INITIAL_KINDS = ("stationary", "any")
_TINY = float(np.finfo(float).tiny)
_EPS = float(np.finfo(float).eps)
_UNDERFLOW = ("The stationary distribution has a probability below the smallest normal double (about 2.2e-308), "
              "where it cannot be computed to relative precision: give the initial distribution explicitly.")


def node_name(i: int) -> str:
    """Name of the i-th record of a chain (1-based): ``"X<i>"``."""
    return f"X{int(i)}"


def check_length(T, where="ChainPrior") -> int:
    r"""The chain length :math:`T` as an int, or PriorError if it is not an integer :math:`\ge 1`.

    ``where`` names the caller.
    """
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or int(T) < 1:
        raise PriorError(f"The chain length T of {where} must be an integer >= 1. Got {T!r} instead.")
    return int(T)


def _validate_stochastic(arr, what: str, notes: list, ndim: int = 1) -> np.ndarray:
    """Check the shape (a non-empty vector, ``ndim`` 1, or a square matrix, 2), non-negativity,
    finiteness and unit row sums."""
    try:
        raw = np.asarray(arr)
    except (TypeError, ValueError):
        raise PriorError(f"The {what} is not a numeric array.") from None
    if raw.dtype.kind not in "iuf":  # no booleans, strings, objects or complex numbers
        raise PriorError(f"The {what} must hold real numbers (got entries of type {raw.dtype}).")
    arr = np.array(raw, dtype=float, copy=True)
    if arr.ndim != ndim or arr.size == 0 or (ndim == 2 and arr.shape[0] != arr.shape[1]):
        form = "a non-empty vector" if ndim == 1 else "square k x k"
        raise PriorError(f"The {what} must be {form}; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise PriorError(f"The {what} has a NaN or infinite entry.")
    if np.any(arr < 0):
        raise PriorError(f"The {what} has a negative entry.")
    sums = arr.sum(axis=-1)
    dev = np.abs(sums - 1.0)
    worst = float(np.max(dev))
    if worst > ROW_TOLERANCE:
        j = int(np.argmax(dev)) if np.ndim(dev) else 0
        loc = f"Row {j} of the " if arr.ndim == 2 else "The "
        raise PriorError(
            f"{loc}{what} sums to {float(np.ravel(sums)[j]):.10g}, off 1 by more than {ROW_TOLERANCE:g}."
        )
    if worst > 0:
        arr = arr / (sums[..., None] if arr.ndim == 2 else sums)
        if worst > _SILENT:
            n = int(np.sum(dev > _SILENT))
            notes.append(f"renormalised {n} row(s) of the {what} (largest deviation {worst:.3g})")
    arr.setflags(write=False)
    return arr


def check_transition_matrix(matrix, what: str, k: int | None = None) -> tuple:
    r"""Validate a row-stochastic :math:`k \times k` matrix as chain transition matrices are validated.

    Entries must be finite real numbers :math:`\ge 0` and rows sum to 1 within
    :data:`ROW_TOLERANCE` (smaller slips are renormalised and described in the
    returned notes).  ``what`` names the matrix in the one-sentence
    :class:`~puffgm.exceptions.PriorError`; ``k``, when given, is the required size.

    Returns
    -------
    tuple
        (matrix, notes): the read-only (k, k) matrix and the notes on what was renormalised.
    """
    notes: list = []
    P = _validate_stochastic(matrix, what, notes, ndim=2)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 1:
        raise PriorError(f"The {what} must be a square k x k matrix; got shape {P.shape}.")
    if k is not None and P.shape[0] != k:
        raise PriorError(f"The {what} is {P.shape[0]} x {P.shape[0]}, but the chain has {k} states.")
    return P, tuple(notes)


def closed_classes(P) -> list:
    """The closed communicating classes of P, from the graph of P > 0 alone.

    A communicating class (a strongly connected component of the directed graph
    with an edge x -> y whenever P[x, y] > 0) is closed when no edge leaves it.
    Every stationary distribution vanishes off the closed classes, and each
    closed class carries exactly one stationary distribution of its own, so P
    has a unique stationary distribution if and only if it has one closed class.

    Parameters
    ----------
    P : ndarray, shape (k, k)
        Non-negative matrix (only its zero pattern is read).

    Returns
    -------
    list of ndarray of int
        The states of each closed class, in increasing order; classes ordered by
        their smallest state.
    """
    from scipy.sparse.csgraph import connected_components

    edges = np.asarray(P) > 0
    _, label = connected_components(edges, directed=True, connection="strong")
    leaves = edges & (label[:, None] != label[None, :])  # edges between two classes
    open_labels = set(label[leaves.any(axis=1)].tolist())
    found = sorted({int(c) for c in label.tolist()} - open_labels, key=lambda c: int(np.argmax(label == c)))
    return [np.flatnonzero(label == c) for c in found]


def gth_stationary(P) -> np.ndarray:
    r"""Stationary law of an irreducible stochastic matrix by GTH elimination (subtraction-free).

    For :math:`n = k-1, \dots, 1` state :math:`n` is censored out (Grassmann, Taksar and Heyman):

    $$
    s_n = \sum_{j<n} A[n, j], \qquad A[i, n] \leftarrow A[i, n] / s_n, \qquad
    A[i, j] \leftarrow A[i, j] + A[i, n]\, A[n, j] \quad (i, j < n),
    $$

    then :math:`x_0 = 1`, :math:`x_n = \sum_{i<n} x_i A[i, n]` and :math:`\pi = x / \sum x`.  The diagonal
    of :math:`P` is never read (:math:`s_n` replaces :math:`1 - A[n, n]`), and every operation adds,
    multiplies or divides non-negative numbers, so each entry of :math:`\pi`, however
    small, has a relative error bounded by a multiple of the unit roundoff that
    depends on :math:`k` alone (O'Cinneide), not merely an absolute one.

    Parameters
    ----------
    P : ndarray, shape (k, k)
        Row-stochastic and irreducible (one communicating class).

    Returns
    -------
    ndarray, shape (k,)
        :math:`\pi > 0` with :math:`\pi P = \pi` and :math:`\sum_x \pi(x) = 1`.

    Raises
    ------
    PriorError
        If a probability of the elimination, or of :math:`\pi`, falls below the smallest normal
        double (about :math:`2.2 \times 10^{-308}`), where relative accuracy is lost.

    References
    ----------
    W. K. Grassmann, M. I. Taksar and D. P. Heyman, "Regenerative analysis and steady
    state distributions for Markov chains", Operations Research 33(5), 1985.
    C. A. O'Cinneide, "Entrywise perturbation theory and error analysis for Markov
    chains", Numerische Mathematik 65, 1993.
    """
    A = np.array(P, dtype=float, copy=True)
    k = A.shape[0]
    with np.errstate(under="ignore"):
        for n in range(k - 1, 0, -1):
            s = A[n, :n].sum()
            if not s >= _TINY:
                raise PriorError(_UNDERFLOW)
            col = A[:n, n] / s
            A[:n, n] = col
            A[:n, :n] += np.outer(col, A[n, :n])
            # a positive probability below the normal range has lost its relative accuracy
            low = (A[:n, :n] < _TINY) & ((col > 0)[:, None] & (A[n, :n] > 0)[None, :])
            np.fill_diagonal(low, False)  # the diagonal is never read
            if low.any() or np.any((col > 0) & (col < _TINY)):
                raise PriorError(_UNDERFLOW)
    x = np.zeros(k)
    x[0] = 1.0
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):  # inf or NaN is refused below
        for n in range(1, k):
            x[n] = x[:n] @ A[:n, n]
    if not np.all(np.isfinite(x)):
        raise PriorError(_UNDERFLOW)
    x = x / x.max()
    pi = x / x.sum()
    if not pi.min() >= _TINY:
        raise PriorError(_UNDERFLOW)
    return pi


def stationary_distribution(P: np.ndarray, *, require_unique: bool = True) -> np.ndarray:
    r"""The stationary law :math:`\pi` of a row-stochastic matrix (:math:`\pi P = \pi`), to full relative precision.

    The zeros of :math:`\pi` come from the structure of :math:`P`: :math:`\pi` vanishes exactly on every
    state outside the closed class (:func:`closed_classes`), and on the closed
    class :math:`C`, :math:`\pi_C` is the stationary law of the stochastic matrix :math:`P[C, C]`,
    computed by :func:`gth_stationary` with a relative error bounded by a multiple
    of the unit roundoff (depending on :math:`k` alone) on every entry, including entries
    of order :math:`10^{-300}`.

    Parameters
    ----------
    P : ndarray, shape (k, k)
        Row-stochastic.
    require_unique : bool
        Refuse a matrix with several closed classes (default).  With ``False``
        such a matrix gets the stationary distribution that gives every closed
        class the same mass.

    Raises
    ------
    PriorError
        If ``require_unique`` and P has several closed classes (then its stationary
        distribution is not unique), or if a stationary probability is below the
        smallest normal double (about 2.2e-308).

    Examples
    --------
    >>> import numpy as np
    >>> from puffgm.chains.priors import stationary_distribution
    >>> pi = stationary_distribution(np.array([[1 - 2.0**-53, 2.0**-53], [0.125, 0.875]]))
    >>> print(f"{pi[1]:.6e}")
    8.881784e-16
    >>> stationary_distribution(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])).tolist()
    [0.5, 0.5, 0.0]
    """
    P = np.asarray(P, dtype=float)
    classes = closed_classes(P)
    if require_unique and len(classes) > 1:
        raise PriorError(
            f"The transition matrix has {len(classes)} closed classes, so its stationary distribution is not "
            "unique: give the initial distribution explicitly."
        )
    pi = np.zeros(P.shape[0])
    for members in classes:
        pi[members] = gth_stationary(P[np.ix_(members, members)]) / len(classes)
    return pi


def _exact_stochastic(values, shape, what: str) -> np.ndarray:
    """``values`` as a read-only float array of ``shape``, refused if a row sum is off 1 by more than 1e-12."""
    arr = np.array(values, dtype=float, copy=True).reshape(shape)
    worst = float(np.max(np.abs(arr.sum(axis=-1) - 1.0)))
    if worst > _SILENT:
        raise PriorError(f"A row of the {what} is off 1 by {worst:.3g}: a saved chain holds normalised rows.")
    arr.setflags(write=False)
    return arr


def _restore_frozen(cls, fields):
    """Unpickle an immutable ChainPrior / ChainPriorClass field by field (arrays read-only again)."""
    obj = cls.__new__(cls)
    for name, value in fields:
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        object.__setattr__(obj, name, value)
    return obj


class ChainPrior:
    r"""One Markov chain :math:`\theta = (q, P)` of length :math:`T` (immutable).

    Parameters
    ----------
    transition : array_like, shape (k, k)
        Row-stochastic: ``transition[x, y] = P(X_{t+1} = y | X_t = x)``.
    initial : array_like of shape (k,), ``"stationary"`` or ``"any"``
        Distribution of :math:`X_1`.
    length : int
        :math:`T \ge 1`.
    states : sequence of str, optional
        State names (default ``"0", "1", ...``).
    name : str, optional
        Label used in messages.

    Raises
    ------
    PriorError
        On a non-square matrix, negative/NaN entries, rows off 1 by more than
        1e-6, an initial vector of the wrong size, a non-unique stationary
        distribution with ``initial="stationary"``, or T < 1.
    """

    __slots__ = ("transition", "initial", "length", "states", "name", "notes", "_pi", "_fp", "_frozen")
    transition: np.ndarray
    initial: np.ndarray | str
    length: int
    states: tuple[str, ...]
    name: str
    notes: tuple[str, ...]
    _pi: np.ndarray | None
    _fp: str | None
    _frozen: bool

    def __init__(self, transition, initial="stationary", length: int = 1, states=None, name: str = "chain"):
        T = check_length(length, f"chain {name!r}")
        P, notes = check_transition_matrix(transition, f"transition matrix of chain {name!r}")
        notes = list(notes)
        k = P.shape[0]
        if states is None:
            states = tuple(str(j) for j in range(k))
        states = tuple(str(s) for s in states)
        if len(states) != k:
            raise PriorError(f"Chain {name!r} has {k} states but {len(states)} state names.")
        if len(set(states)) != k:
            raise PriorError(f"Chain {name!r} has duplicate state names.")
        pi = None
        if isinstance(initial, str):
            if initial not in _INITIAL_KINDS:
                raise PriorError(
                    f"The initial distribution of chain {name!r} must be a probability vector, 'stationary' or "
                    f"'any'. Got {initial!r} instead."
                )
            if initial == "stationary":
                pi = stationary_distribution(P)
                pi.setflags(write=False)
        else:
            q = _validate_stochastic(initial, f"initial distribution of chain {name!r}", notes)
            if q.ndim != 1 or q.shape[0] != k:
                raise PriorError(
                    f"The initial distribution of chain {name!r} has {q.size} entries, expected {k} (one per state)."
                )
            initial = q
        object.__setattr__(self, "transition", P)
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "length", T)
        object.__setattr__(self, "states", states)
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "notes", tuple(notes))
        object.__setattr__(self, "_pi", pi)
        object.__setattr__(self, "_fp", None)
        object.__setattr__(self, "_frozen", True)

    @classmethod
    def exact(cls, transition, initial="stationary", length: int = 1, states=None, name: str = "chain") -> ChainPrior:
        """The chain with exactly these probabilities, bit for bit (a saved prior read back).

        Validated as by the constructor, which renormalises a row whose sum is off 1 by any
        amount; here a row off 1 by more than 1e-12 is refused instead and the values are
        kept as given, so the fingerprint of a saved chain is that of the chain read back.
        """
        checked = cls(transition, initial, length, states, name)
        fields = {slot: getattr(checked, slot) for slot in cls.__slots__}
        P = _exact_stochastic(transition, checked.transition.shape, f"transition matrix of chain {name!r}")
        fields.update(transition=P, _fp=None)
        if checked.initial_kind == "vector":
            fields["initial"] = _exact_stochastic(initial, (checked.k,), f"initial distribution of chain {name!r}")
        if checked.initial_kind == "stationary":
            pi = stationary_distribution(P)
            pi.setflags(write=False)
            fields["_pi"] = pi
        return _restore_frozen(cls, tuple(fields.items()))

    def __setattr__(self, key, value):
        raise AttributeError("ChainPrior is immutable")

    def __reduce__(self):
        # pickling (worker processes, Dask): restore the validated fields as they are, not re-validated
        return _restore_frozen, (ChainPrior, tuple((s, getattr(self, s)) for s in self.__slots__))

    def __repr__(self):
        init = self.initial if isinstance(self.initial, str) else "vector"
        return f"ChainPrior({self.name!r}, k={self.k}, T={self.length}, initial={init})"

    @property
    def k(self) -> int:
        """Number of states."""
        return self.transition.shape[0]

    @property
    def initial_kind(self) -> str:
        """``"vector"``, ``"stationary"`` or ``"any"``."""
        return self.initial if isinstance(self.initial, str) else "vector"

    @property
    def stationary(self) -> np.ndarray:
        r"""The stationary distribution :math:`\pi` of :math:`P` (unique one required)."""
        pi = self._pi
        if pi is None:
            pi = stationary_distribution(self.transition)
            pi.setflags(write=False)
            object.__setattr__(self, "_pi", pi)
        return pi

    @property
    def initial_vector(self):
        r""":math:`q` as a vector (:math:`\pi` for ``"stationary"``), or None for ``"any"``."""
        if self.initial_kind == "any":
            return None
        if self.initial_kind == "stationary":
            return self.stationary
        return self.initial

    @property
    def fingerprint(self) -> str:
        """A SHA-256 prefix of (T, states, initial, P)."""
        fp = self._fp
        if fp is None:
            h = hashlib.sha256()
            h.update(repr(("chain", self.length, self.states, self.initial_kind)).encode())
            if self.initial_kind == "vector":
                h.update(np.ascontiguousarray(self.initial).tobytes())
            h.update(np.ascontiguousarray(self.transition).tobytes())
            fp = h.hexdigest()[:16]
            object.__setattr__(self, "_fp", fp)
        return fp

    def with_length(self, length: int) -> ChainPrior:
        """The same chain with another length T."""
        return ChainPrior(self.transition, self.initial, length, self.states, self.name)

    def to_pgmpy(self):
        r"""Unroll to a pgmpy ``DiscreteBayesianNetwork`` :math:`X_1 \to X_2 \to \dots \to X_T`.

        ``"stationary"`` uses :math:`\pi` as the CPD of :math:`X_1`.  ``"any"`` cannot be
        unrolled to one network (it is an infinite family) and raises.
        """
        if self.initial_kind == "any":
            raise PriorError(
                f"Chain {self.name!r} has initial='any' (every initial distribution): it is an infinite family and "
                "cannot be unrolled to one Bayesian network."
            )
        if self.length > 5000:
            raise PriorError(f"Chain {self.name!r} has T={self.length}: too long to unroll (at most 5000 nodes).")
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        T, k = self.length, self.k
        names = [node_name(i) for i in range(1, T + 1)]
        model = DiscreteBayesianNetwork()
        model.add_nodes_from(names)
        model.add_edges_from(zip(names[:-1], names[1:], strict=True))
        sn = list(self.states)
        q = np.asarray(self.initial_vector, dtype=float)
        cpds = [TabularCPD(names[0], k, q.reshape(k, 1), state_names={names[0]: sn})]
        for t in range(1, T):
            cpds.append(
                TabularCPD(
                    names[t],
                    k,
                    np.asarray(self.transition).T.copy(),
                    evidence=[names[t - 1]],
                    evidence_card=[k],
                    state_names={names[t]: sn, names[t - 1]: sn},
                )
            )
        model.add_cpds(*cpds)
        return model


class ChainPriorClass:
    r"""A finite class :math:`\Theta` of Markov chains sharing the length :math:`T` and the states.

    Parameters
    ----------
    members : iterable of ChainPrior
        The members :math:`\theta = (q_\theta, P_\theta)`; an ``initial="any"`` member
        stands for every initial distribution with its :math:`P` (appendix C.4).

    Attributes
    ----------
    members, length (T), k, states, fingerprint, notes.
    length_source : str
        Where T comes from: ``"given"``, or ``"longest trace"`` for a class
        fitted without ``length`` (:func:`fit_chain`).

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass
    >>> theta = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial=[1, 0], length=100)
    >>> theta.length, theta.k
    (100, 2)
    """

    __slots__ = ("members", "length", "k", "states", "fingerprint", "notes", "length_source", "_frozen")
    members: tuple[ChainPrior, ...]
    length: int
    k: int
    states: tuple[str, ...]
    fingerprint: str
    notes: tuple[str, ...]
    length_source: str
    _frozen: bool

    def __init__(self, members: Iterable[ChainPrior]):
        members = tuple(members)
        if not members:
            raise PriorError("The chain prior class is empty: give at least one chain.")
        for m in members:
            if not isinstance(m, ChainPrior):
                raise PriorError(f"A chain prior class holds ChainPrior objects; got {type(m).__name__}.")
        first = members[0]
        for j, m in enumerate(members[1:], start=2):
            if m.length != first.length:
                raise PriorError(f"Chain {j} has length {m.length} but chain 1 has length {first.length}.")
            if m.states != first.states:
                raise PriorError(f"Chain {j} has states {list(m.states)} but chain 1 has {list(first.states)}.")
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "length", first.length)
        object.__setattr__(self, "k", first.k)
        object.__setattr__(self, "states", first.states)
        h = hashlib.sha256("|".join(m.fingerprint for m in members).encode())
        object.__setattr__(self, "fingerprint", "chain-" + h.hexdigest()[:16])
        notes: list[str] = []
        for j, m in enumerate(members, start=1):
            notes.extend(f"chain {j} ({m.name}): {n}" for n in m.notes)
        object.__setattr__(self, "notes", tuple(notes))
        object.__setattr__(self, "length_source", "given")
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key, value):
        raise AttributeError("ChainPriorClass is immutable")

    def __reduce__(self):
        return _restore_frozen, (ChainPriorClass, tuple((s, getattr(self, s)) for s in self.__slots__))

    def __len__(self):
        return len(self.members)

    def __iter__(self):
        return iter(self.members)

    def __repr__(self):
        return f"ChainPriorClass({len(self.members)} chain(s), k={self.k}, T={self.length}, {self.fingerprint})"

    # ----------------------------------------------------------------- views
    @property
    def nodes(self) -> tuple:
        """Node names X1..XT (materialised; avoid for very long chains)."""
        return tuple(node_name(i) for i in range(1, self.length + 1))

    @property
    def initial_kinds(self) -> frozenset:
        return frozenset(m.initial_kind for m in self.members)

    def with_length(self, length: int) -> ChainPriorClass:
        """The same class with another chain length T."""
        return ChainPriorClass(m.with_length(length) for m in self.members)

    def to_pgmpy(self):
        """A pgmpy network (one member) or a list of networks (one per member)."""
        models = [m.to_pgmpy() for m in self.members]
        return models[0] if len(models) == 1 else models

    # ------------------------------------------------------------ builders
    @classmethod
    def from_matrices(cls, transition, initial="stationary", length: int = 1, states=None) -> ChainPriorClass:
        """One chain (q, P) of length T: ``initial`` is a vector, ``"stationary"`` or ``"any"``."""
        return cls([ChainPrior(transition, initial, length, states, name="chain")])

    @classmethod
    def from_family(cls, transitions: Sequence, initials="stationary", length: int = 1, states=None) -> ChainPriorClass:
        """A finite family of pairs :math:`(q_j, P_j)`.

        ``initials`` is one value used for every P (a vector, ``"stationary"``
        or ``"any"``) or a list of the same length as ``transitions``.
        """
        transitions = list(transitions)
        if not transitions:
            raise PriorError("The family of transition matrices is empty.")
        if isinstance(initials, str) or _is_vector(initials) or (
            isinstance(initials, np.ndarray) and initials.ndim == 1
        ):
            initials = [initials] * len(transitions)
        initials = list(initials)
        if len(initials) != len(transitions):
            raise PriorError(
                f"The family has {len(transitions)} transition matrices but {len(initials)} initial distributions."
            )
        return cls(
            ChainPrior(P, q, length, states, name=f"chain {j}")
            for j, (P, q) in enumerate(zip(transitions, initials, strict=True), start=1)
        )

    @classmethod
    def from_pgmpy(cls, model, length: int, initial=None) -> ChainPriorClass:
        """Convert a ``pgmpy.models.MarkovChain`` to a chain prior of length T.

        pgmpy's ``MarkovChain`` holds one transition model per variable; the
        variables move independently, so the joint chain has the Kronecker
        product of the per-variable matrices as transition matrix, over joint
        states named ``"var1=s1,var2=s2"``.  It holds a start *state*, not a
        distribution: by default the initial distribution is the point mass on
        that state (this is how ``MarkovChain.sample`` starts), and when no
        start state is set, the uniform distribution over joint states (pgmpy
        then draws the start uniformly, ``MarkovChain.random_state``).  Pass
        ``initial`` (vector, ``"stationary"`` or ``"any"``) to override.  What
        was assumed is recorded in :attr:`notes`.
        """
        variables = list(getattr(model, "variables", []))
        if not variables:
            raise PriorError("The pgmpy MarkovChain has no variables.")
        mats = []
        names = []
        for v in variables:
            tm = model.transition_models.get(v)
            if tm is None:
                raise PriorError(f"Variable {v!r} of the pgmpy MarkovChain has no transition model.")
            card = int(model.cardinalities[v])
            M = np.zeros((card, card))
            for s, row in tm.items():
                for t, p in row.items():
                    M[int(s), int(t)] = float(p)
            mats.append(M)
            names.append([f"{v}={s}" for s in range(card)])
        P: np.ndarray = mats[0]
        states = names[0]
        for M, nm in zip(mats[1:], names[1:], strict=True):
            P = np.kron(P, M)
            states = [f"{a},{b}" for a in states for b in nm]
        if len(variables) == 1:
            states = [s.split("=", 1)[1] for s in states]
        notes = []
        if initial is None:
            if model.state is not None:
                sd = {var: int(st) for var, st in model.state}
                idx = 0
                for v in variables:
                    idx = idx * int(model.cardinalities[v]) + sd[v]
                initial = np.zeros(P.shape[0])
                initial[idx] = 1.0
                notes.append(
                    f"pgmpy MarkovChain: initial distribution = point mass on the start state {states[idx]!r} "
                    "(pgmpy holds a start state, not a distribution)"
                )
            else:
                initial = np.full(P.shape[0], 1.0 / P.shape[0])
                notes.append(
                    "pgmpy MarkovChain: no start state set, initial distribution = uniform over states "
                    "(as MarkovChain.sample draws the start)"
                )
        else:
            notes.append("pgmpy MarkovChain: initial distribution given explicitly")
        if len(variables) > 1:
            notes.append(
                f"pgmpy MarkovChain: {len(variables)} variables moving independently, joint transition matrix = "
                "Kronecker product of their transition models"
            )
        member = ChainPrior(P, initial, length, states, name="pgmpy MarkovChain")
        out = cls([member])
        object.__setattr__(out, "notes", tuple(notes) + out.notes)
        return out

    @classmethod
    def fit(
        cls,
        sequences,
        length: int | None = None,
        *,
        states=None,
        initial="stationary",
        tau: float = SMOOTHING_TAU,
    ) -> ChainPriorClass:
        """Fit a transition matrix to observed states: :func:`fit_chain` (the same code and inputs).

        Parameters
        ----------
        sequences : sequence, array, pandas Series or DataFrame, or list of traces
            Observed states, read as values (:func:`puffgm.chains.data.read_traces`);
            ``None`` or NaN entries are gaps: the chain restarts after a gap.
        length : int, optional
            :math:`T` of the prior (default: the longest trace from its first to its last
            observation, gaps included; :attr:`length_source` says which).
        states, initial, tau
            As in :func:`fit_chain`.
        """
        return fit_chain(sequences, states=states, length=length, initial=initial, tau=tau)


class InfiniteChainClass:
    r"""An infinite class :math:`\Theta` of chains, calibrated by certified suprema over the class.

    The calibrations of the library (:class:`~puffgm.chains.MQMExact`,
    :class:`~puffgm.chains.MQMApprox`, :func:`~puffgm.chains.gk16`,
    :func:`~puffgm.chains.group_dp`) accept such a class wherever they accept a
    :class:`ChainPriorClass`; where a value depends on the members they ask the
    class itself, through the three methods below, for a value proven to bound
    the supremum over :math:`\Theta`.  :class:`~puffgm.chains.ChainParameterBox`
    (Song et al., section 5.2) is the library's subclass.

    A subclass provides the attributes ``length`` (T), ``k``, ``initial_kind``,
    ``initial_kinds``, ``fingerprint`` and ``notes`` of a chain class, and the
    methods below.
    """

    __slots__ = ()

    # provided by every subclass (declared here for type checkers; no values)
    length: int
    k: int
    initial_kind: str
    fingerprint: str
    notes: tuple

    def certified_exact(self, *, epsilon: float, lipschitz: float = 1.0, options=None):
        r"""MQMExact (Algorithm 3) over the class: a result with :math:`\sigma_{\max} \ge \sup_\theta \sigma_\theta`.

        ``options``, when given, are recorded on the result (``CalibrationResult.options``).
        """
        raise NotImplementedError

    def mixing_bounds(self) -> dict:
        r"""Extremes over the class of the MQMApprox parameters (Lemma 4.8).

        A dict with ``pi_min`` (inf of :math:`\min_x \pi(x)`), ``gap_ppstar`` (inf of
        :math:`1 - \lambda_2(P P^*)`), ``gap_rev`` (inf of the Lemma C.4 gap, or None) and
        ``reversible`` (True if every member is reversible).
        """
        raise NotImplementedError

    def gk16_gamma_bounds(self) -> tuple:
        r"""Certified (lower, upper) bracket of the sup over the class of GK16's :math:`\gamma` (binary chains)."""
        raise NotImplementedError


def smooth_transition(P, tau: float = SMOOTHING_TAU) -> np.ndarray:
    r"""Bai et al. appendix D.2: zero entries become :math:`\tau`, non-zero ones shrink proportionally."""
    P = np.array(P, dtype=float, copy=True)
    zero = P <= 0
    nz = zero.sum(axis=1, keepdims=True)
    scale = (1.0 - nz * tau) / np.where(P.sum(axis=1, keepdims=True) > 0, P.sum(axis=1, keepdims=True), 1.0)
    return np.where(zero, tau, P * scale)


def _is_vector(x) -> bool:
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, numbers.Real) for v in x):
        return True
    return False


def fit_chain(data, *, states=None, length: int | None = None, initial="stationary", tau: float = SMOOTHING_TAU,
              id_column=None, value_column=None, order_column=None) -> ChainPriorClass:
    """Fit a one-chain prior class to observed traces: transition counts, smoothed (Bai et al., D.2).

    P[i, j] is the number of observed steps i -> j over the number of steps
    out of i, counted within gap-free runs; a state never left gets a uniform
    row.  The class says how it was built in :attr:`ChainPriorClass.notes`
    (observations, runs, traces, where T comes from) and
    :attr:`ChainPriorClass.length_source`.

    Parameters
    ----------
    data : sequence, numpy array, pandas Series or DataFrame, mapping, or list of traces
        Read by :func:`puffgm.chains.data.read_traces`: entries are states
        (a string is one state, never iterated); ``None``, NaN and pandas'
        ``NA`` are gaps that split a trace into runs (no transition is counted
        across a gap); a DataFrame gives one trace per column, or per id with
        ``id_column``.
    states : sequence, optional
        The state space, in order (default: the distinct observed values in
        their natural order, :func:`puffgm.core.states.natural_order`: numbers
        by value, intervals by their left edge).  An observed value stands for
        the state it names (``3`` and ``3.0`` for ``"3"``).  Needed when the
        data holds non-integral numbers (measurements rather than states: bin
        them first with :func:`puffgm.chains.data.discretise`).
    length : int, optional
        T, the number of records of the prior.  Default: the length of the
        longest trace from its first to its last observation, gaps included
        (a series of 2283 weeks with gaps is a trace of T = 2283 records, not
        of its longest gap-free run).
    initial : vector, ``"stationary"`` (default) or ``"any"``
        The initial distribution (see :class:`ChainPrior`).
    tau : float
        Additive smoothing (Bai et al., appendix D.2): every zero entry of a
        row becomes ``tau`` and the added mass is subtracted proportionally
        from the non-zero entries, in [0, 1/k).  ``tau=0`` keeps the empirical
        zeros, which make transitions impossible under the prior.
    id_column, value_column, order_column : str, optional
        Long-format data frames (:func:`puffgm.chains.data.read_traces`).

    Returns
    -------
    ChainPriorClass
        One member, named ``"fitted chain"``; states are ``str`` of the values.

    Raises
    ------
    PriorError
        One sentence: a bare string, no observed state, non-integral numbers
        without ``states``, a value missing from ``states``, or a bad ``tau``.

    Examples
    --------
    >>> import pandas as pd
    >>> import puffgm
    >>> cc = puffgm.fit_chain(pd.Series(["up", "down", "down", None, "flat", "up"]), tau=0)
    >>> cc.states, cc.length, cc.length_source
    (('down', 'flat', 'up'), 6, 'longest trace')
    >>> cc.members[0].transition[2].tolist()      # from 'up': one step to 'down'
    [1.0, 0.0, 0.0]
    """
    from puffgm.chains.data import read_traces

    traces = read_traces(data, id_column=id_column, value_column=value_column, order_column=order_column)
    runs = traces.runs
    if not runs:
        raise PriorError(f"No observed states to fit a chain to in {traces.source}.")
    states = _fit_states(runs, states)
    counts = _transition_counts(runs, states)
    k = len(states)
    tau = float(tau)
    if not (math.isfinite(tau) and 0 <= tau < 1.0 / max(k, 1)):
        raise PriorError(f"The smoothing tau must be in [0, 1/k). Got {tau!r} instead.")
    rows = counts.sum(axis=1, keepdims=True)
    P = np.where(rows > 0, counts / np.where(rows > 0, rows, 1.0), 1.0 / k)
    n_obs = sum(len(r) for r in runs)
    notes = [f"fitted from {n_obs} observations in {len(runs)} gap-free run(s) of {len(traces.traces)} trace(s) "
             f"({traces.source}), {int(counts.sum())} transitions counted"]
    unseen = int(np.sum(rows[:, 0] == 0))
    if unseen:
        notes.append(f"{unseen} state(s) never left in the data: uniform transition rows")
    if tau > 0:
        P = smooth_transition(P, tau)
        notes.append(f"additive smoothing tau={tau:g} of zero transition probabilities (Bai et al., D.2)")
    T, source, note = _fit_length(length, traces.span, max(len(r) for r in runs))
    notes.append(note)
    out = ChainPriorClass([ChainPrior(P, initial, T, [state_label(s) for s in states], name="fitted chain")])
    object.__setattr__(out, "notes", tuple(notes) + out.notes)
    object.__setattr__(out, "length_source", source)
    return out


def _fit_states(runs: list, states) -> list:
    """The state list: given, or the sorted distinct observed values (never non-integral numbers)."""
    if states is not None:
        if isinstance(states, (str, bytes)):
            raise PriorError("states is the list of states; got a single string.")
        return list(states)
    try:
        seen = {v for r in runs for v in r}
    except TypeError as e:
        raise PriorError(f"A state must be hashable (a number, a string, a tuple): {e}.") from None
    frac = [v for v in seen if isinstance(v, float)]
    if frac:
        raise PriorError(f"The data holds {len(frac)} distinct non-integral numbers (e.g. {frac[0]!r}), measurements "
                         "rather than states: bin them first (puffgm.chains.data.discretise(x, k)) or list the "
                         "states with states=.")
    return natural_order(seen)


def _transition_counts(runs: list, states: list) -> np.ndarray:
    """counts[i, j]: observed steps from states[i] to states[j] within the runs.

    An observed value stands for the state it names (:func:`puffgm.core.states.match_state`:
    ``3``, ``3.0`` and ``"3"`` are the state ``"3"``); a value that is no state is refused.
    """
    names = [state_label(s) for s in states]
    index = {n: j for j, n in enumerate(names)}
    resolved: dict = {}

    def position(v) -> int:
        key = (type(v).__name__, v)
        if key not in resolved:
            try:
                resolved[key] = index[match_state(v, names, "the chain", PriorError, positions=False)]
            except PriorError:
                raise PriorError(f"Observed state {v!r} is not in the given state list "
                                 f"({', '.join(names)}).") from None
        return resolved[key]

    counts = np.zeros((len(states), len(states)))
    for r in runs:
        idx = np.fromiter((position(v) for v in r), dtype=np.int64, count=len(r))
        if idx.size > 1:
            np.add.at(counts, (idx[:-1], idx[1:]), 1.0)
    return counts


def _fit_length(length, span: int, longest_run: int) -> tuple:
    """(T, length_source, note) of a fitted chain."""
    if length is not None:
        T = check_length(length, "fit_chain")
        return T, "given", f"T = {T} records, given (the longest trace spans {span} steps)"
    run = "" if longest_run == span else f"; its longest gap-free run has {longest_run}"
    return span, "longest trace", (f"T = {span} records: the longest trace from its first to its last observation, "
                                   f"gaps included{run}; give length= to choose T")


def chain_class_to_json(obj: ChainPriorClass) -> dict:
    """The body of a saved class of Markov chains (kind ``"markov-chain"``, :mod:`puffgm.api.persist`).

    ``"length"`` (T), ``"length_source"``, ``"states"`` and ``"members"``: ``{"name", "notes",
    "initial": "stationary" | "any" | [q_0, ...], "transition": [[...], ...]}``.
    """
    return {"length": obj.length, "length_source": obj.length_source, "states": list(obj.states),
            "members": [{"name": m.name, "notes": list(m.notes),
                         "initial": m.initial if isinstance(m.initial, str) else m.initial.tolist(),
                         "transition": m.transition.tolist()} for m in obj.members]}


def chain_class_from_json(data: dict, label: str) -> ChainPriorClass:
    """The class of Markov chains :func:`chain_class_to_json` wrote, every row validated and kept exactly."""
    saved = saved_members(data, label)
    members = [ChainPrior.exact(m["transition"], m.get("initial", "stationary"), data["length"], data["states"],
                                name=str(m.get("name", f"chain {j}")))
               for j, m in enumerate(saved, start=1)]
    for member, m in zip(members, saved, strict=True):
        object.__setattr__(member, "notes", tuple(map(str, m.get("notes", ()))))
    out = ChainPriorClass(members)
    source = data.get("length_source", "given")
    if source not in ("given", "longest trace"):
        raise PriorError(f"The 'length_source' of {label} must be 'given' or 'longest trace'; got {source!r}.")
    object.__setattr__(out, "length_source", source)
    return out
