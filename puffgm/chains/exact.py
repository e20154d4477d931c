r"""MQMExact: the Markov Quilt Mechanism for Markov chains, exact max-influence.

Song, Wang and Chaudhuri, section 4.4.1 and Algorithm 3.  For a chain
:math:`X_1 \to \cdots \to X_T`, Lemma 4.6 shows that the quilts of :math:`X_i` worth searching are

$$
\begin{array}{ll}
\{X_{i-a}, X_{i+b}\} & (\mathrm{card}(X_N) = a + b - 1), \\
\{X_{i-a}\} & (\mathrm{card}(X_N) = T - i + a), \\
\{X_{i+b}\} & (\mathrm{card}(X_N) = i + b - 1), \\
\emptyset & (\mathrm{card}(X_N) = T, \text{ max-influence } 0),
\end{array}
$$

and equation (5) splits the max-influence of :math:`\{X_{i-a}, X_{i+b}\}` under :math:`\theta`:

$$
e_\theta = \max_{x, x'} \left[ \max_{x_{i-a}} \log \frac{P^a(x_{i-a}, x)}{P^a(x_{i-a}, x')} + \max_{x_{i+b}} \log
  \frac{P^b(x, x_{i+b})}{P^b(x', x_{i+b})} + \log \frac{P(X_i = x')}{P(X_i = x)} \right].
$$

Zero probabilities are handled exactly (the library's convention, shared with
the Bayesian-network road :func:`puffgm.networks.calibration.calibrate`): a secret
value of probability zero is not a secret pair; a quilt value :math:`x_Q` of
probability zero under both secrets is skipped (so the left end ranges only
over states :math:`x_{i-a}` with :math:`P(X_{i-a} = x_{i-a}) > 0`); a zero denominator with a
positive numerator is an infinite influence (the quilt is unusable).  The
paper's running example counts left-end states of probability zero (13.0219
instead of the exact 12.9341 for :math:`\theta_1`); ``paper_convention=True`` reproduces
that table.

The class :math:`\Theta` is a finite family of pairs :math:`(q, P)` with :math:`q` a vector,
``"stationary"`` or ``"any"``; the influence of a quilt is the supremum over
:math:`\Theta` (Definition 4.1).  For ``"any"`` (:math:`\Theta_P = \Delta_k \times \{P\}`, appendix C.4)
the supremum over :math:`q` is in closed form:

$$
\sup_q \frac{P(X_i = x')}{P(X_i = x)} = \max_y \frac{P^{i-1}(y, x')}{P^{i-1}(y, x)},
$$

(:math:`+\infty` if some :math:`y` has :math:`P^{i-1}(y, x) = 0 < P^{i-1}(y, x')`), and the left end
ranges over every state reachable at time :math:`i - a`.

Speed.  Powers :math:`P^a` and the tables of equation (5) are computed once per
member by dynamic programming; each node's search is best-first: a quilt
:math:`\{X_{i-a}, X_{i+b}\}` is evaluated only if its lower bound
:math:`(a + b - 1) / (\epsilon - \max(e(\{X_{i-a}\}), e(\{X_{i+b}\})))` beats the best
score found (the two-sided influence dominates both one-sided ones).  The
maximum quilt length :math:`l` is chosen adaptively so that the answer is exact: a
quilt with :math:`\mathrm{card}(X_N) > l` has score :math:`> l / \epsilon`, so once
:math:`\sigma_{\max} \le (l+1)/\epsilon` no longer quilt can matter (Algorithm 3's parameter :math:`l`, made safe).

Two shortcuts make the cost independent of :math:`T`:

* stationary start (section 4.4.1, last paragraph): the influences depend on
  :math:`(a, b)` only, so the middle node is searched once; if its best quilt is
  two-sided, the exact analogue of Lemma C.9 gives :math:`\sigma_{\max} = \sigma_{\text{middle}}`
  (shifting the quilt, or dropping the end that falls off the chain, never
  increases :math:`\mathrm{card}(X_N)` nor the influence);
* ``"any"`` initial distribution: the laws of :math:`(X_{i-a}, X_i, X_{i+b})` reachable
  from :math:`\Delta_k` shrink as :math:`i` grows (:math:`q P^{i-a-1}` ranges over a shrinking set), so
  the influences are non-increasing in :math:`i` and the nodes are scanned from the
  left until the first node whose best quilt is two-sided.

A fixed non-stationary start :math:`q` (a vector) uses a third one: the early nodes
are searched exactly and every later node is bounded by the stationary chain
with the same :math:`P` at :math:`\epsilon - \Omega`, where :math:`\Omega` is a certified bound on the
Hilbert projective distance between :math:`q P^{i-1}` and :math:`\pi`, which a stochastic matrix
never expands (:func:`_mixing_run`; docs/chains.md).  The scan stops
once the bound is below the early maximum (exact result) or within
``mixing_rtol`` of the stationary value, so the cost stops growing with :math:`T`.
Periodic chains, transient states or ``mixing=False``: every node is searched,
each at a cost bounded by :math:`l`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from puffgm.chains.budget import ChainClock, check_chain_length, check_memory
from puffgm.chains.priors import ChainPrior, ChainPriorClass, InfiniteChainClass, node_name
from puffgm.core.results import CalibrationResult, QuiltChoice, QuiltGraph
from puffgm.core.validation import check_positive_finite, check_positive_int, check_time_limit
from puffgm.exceptions import NumericalError, ParameterError, PriorError
from puffgm.mechanisms.mqm_loop import run_mqm, search_nodes, worst_index

__all__ = [
    "MQMExact", "mqm_exact", "chain_max_influence", "ChainQuiltResult", "ChainQuiltSearch", "quilt_choice",
    "ratio_max",
    "THEOREM_EXACT", "PER_NODE_LIMIT", "PER_NODE_DEFAULT_LIMIT",
]

THEOREM_EXACT = (
    "Song-Wang-Chaudhuri Theorem 4.3 with Algorithm 3 (MQMExact), Lemma 4.6 quilt family, equation (5)"
)
#: Above this chain length per_node and remote sets are not materialised.
PER_NODE_LIMIT = 10000
#: By default every node's active quilt is searched only for chains this short: the
#: every-node search costs O(T) node searches, where the shortcuts cost O(1) or O(l).
PER_NODE_DEFAULT_LIMIT = 200
_NEG = -math.inf
#: Least seconds of one node search (the time projections use it; measured ones are 10 to 100 times more).
_NODE_SECONDS = 2e-6
#: Bytes held per node by a search of every node (its result and marginal, without the k x k tables).
_NODE_BYTES = 512
#: Positive probabilities below this are refused (NumericalError) rather than risk an
#: underflow to a false zero; exact zeros are legitimate.
_TINY = 1e-280


def _log(p):
    """log with exact zeros mapped to -inf (masked ufunc: no warnings, no errstate switch)."""
    p = np.asarray(p, dtype=float)
    return np.log(p, out=np.full(p.shape, -math.inf), where=p > 0)


def ratio_max(logM: np.ndarray, support=None) -> np.ndarray:
    """out[..., x, x'] = max over y in support with M[y, x] > 0 of log M[y, x] - log M[y, x'].

    +inf when some such y has M[y, x'] = 0 (zero denominator, positive
    numerator); -inf when no y qualifies.  ``logM`` has shape (..., k, k) with
    rows y and columns x.  Pairs y with M[y, x] = M[y, x'] = 0 are skipped.
    """
    logM = np.asarray(logM, dtype=float)
    num = logM[..., :, :, None]
    den = logM[..., :, None, :]
    ok = np.isfinite(num)
    if support is not None:
        ok = ok & np.asarray(support, dtype=bool)[:, None, None]
    shape = np.broadcast_shapes(num.shape, den.shape)
    diff = np.subtract(num, den, out=np.full(shape, math.inf), where=np.isfinite(den) & ok)
    diff = np.where(ok, diff, _NEG)
    return diff.max(axis=-3)


def _max_kk(X: np.ndarray) -> np.ndarray:
    """out[j] = X[j].max() for a stack X of shape (n, k, k)."""
    n, k, k2 = X.shape
    return np.maximum.reduce(X.reshape(n, k * k2), axis=1)


def _score(card, infl, eps: float) -> np.ndarray:
    r""":math:`\mathrm{card} / (\epsilon - \mathrm{infl})`, +inf where :math:`\mathrm{infl} \ge \epsilon` or NaN.

    Float arrays of one shape.
    """
    return np.divide(card, eps - infl, out=np.full(infl.shape, math.inf), where=infl < eps)


def _first_min(card0: int, infl: list, eps: float):
    """(j, score, infl[j]) minimising score(card0 + j, infl[j]) over j, first index on ties (as np.argmin).

    Python-float twin of ``_score`` + ``np.argmin`` for the short one-sided scans:
    the same IEEE divisions, so the same values.
    """
    bj, bs = 0, math.inf
    for j, d in enumerate(infl):
        if d < eps:
            s = (card0 + j) / (eps - d)
            if s < bs:
                bj, bs = j, s
    return bj, bs, infl[bj]


@lru_cache(maxsize=64)
def _first_node_C(k: int) -> np.ndarray:
    """C of node 1 under ``"any"`` (read-only): 0 on the diagonal, +inf elsewhere (q may be a point mass)."""
    C = np.where(np.eye(k, dtype=bool), 0.0, math.inf)
    C.flags.writeable = False
    return C


def _pairs(amax: int, bmax: int, ell: int):
    r"""(a - 1, b - 1, card) of the two-sided quilts with :math:`\mathrm{card} = a + b - 1 \le l` (read-only).

    Row-major in :math:`(a, b)`.  Kept in a cache when there are at most :math:`2^{16}` of them (the long
    tables would hold memory).
    """
    if amax * bmax <= 2**16:
        return _pairs_cached(amax, bmax, ell)
    return _pairs_of(amax, bmax, ell)


@lru_cache(maxsize=256)
def _pairs_cached(amax: int, bmax: int, ell: int):
    return _pairs_of(amax, bmax, ell)


def _pairs_of(amax: int, bmax: int, ell: int):
    aa, bb = np.divmod(np.arange(amax * bmax), bmax)
    card = aa + bb + 1
    ok = card <= ell
    t = (aa[ok], bb[ok], card[ok].astype(float))
    for x in t:
        x.flags.writeable = False
    return t


def _ratio_max_chunked(logMs: np.ndarray, support=None) -> np.ndarray:
    n, k = logMs.shape[0], logMs.shape[-1]
    step = max(1, int(2e7 // max(k**3, 1)))
    if n <= step:
        return ratio_max(logMs, support)
    return np.concatenate([ratio_max(logMs[j : j + step], support) for j in range(0, n, step)])


@dataclass(frozen=True, slots=True)
class ChainQuiltResult:
    r"""The best Lemma 4.6 quilt found for one node :math:`X_i` of a chain (Song, Wang and Chaudhuri, Algorithm 3).

    The quilt is :math:`\{X_{i-a}, X_{i+b}\}` (:math:`a = 0`: no left end, :math:`b = 0`: no right end); its
    nearby set has ``card`` nodes, and its score is :math:`\mathrm{card}(X_N) / (\epsilon - e(X_Q \mid X_i))`
    (MQMApprox ranks :math:`\epsilon` times it and divides at the end).

    Attributes
    ----------
    score : float
        The quilt's score, :math:`\sigma` for this node (inf when the influence reaches :math:`\epsilon`).
    kind : str
        ``"two"``, ``"left"``, ``"right"`` or ``"trivial"`` (:math:`X_Q` empty, :math:`X_N` every node).
    a, b : int
        Distances of the left and right ends from :math:`X_i` (0: that end is absent).
    influence : float
        The max-influence :math:`e(X_Q \mid X_i)`, or the bound on it that the score uses.
    card : int
        :math:`\mathrm{card}(X_N)`, the number of nearby nodes (:math:`X_i` included).
    """

    score: float
    kind: str
    a: int
    b: int
    influence: float
    card: int


class _Member:
    r"""Tables of one member :math:`\theta = (q, P)`: powers, equation-(5) tables, marginals."""

    clock: ChainClock | None = None  # the time budget of the loop over powers (set by ChainQuiltSearch)
    eta: float  # stationary members of a mixing scan's twin only (set by MQMExact)
    drift: float  # the same: 2 d_H(pi, pi*), a bound of the drift of Omega over any number of steps

    def __init__(self, prior, paper_convention: bool):
        self.prior = prior
        self.P = np.asarray(prior.transition, dtype=float)
        self.k = self.P.shape[0]
        self.kind = prior.initial_kind
        self.paper = paper_convention
        k = self.k
        self.pows = [np.eye(k)]  # P^0 .. P^L
        self.logpows = [_log(np.eye(k))]
        self.A_full = np.zeros((1, k, k))  # index 0 unused
        self.B = np.zeros((1, k, k))
        self.Bmax = np.zeros(1)  # Bmax[b] = max over (x, x') of B[b] (index 0 unused)
        self._A_cache: dict = {}
        self._reach: tuple | None = None  # (j, P^j > 0 by structure as 0/1), the last one computed
        self._any_nodes: dict = {}  # "any": i -> (V, C, V.all()), which do not depend on amax nor on L
        if self.kind == "vector":
            self.mu = [np.asarray(prior.initial, dtype=float)]
        elif self.kind == "stationary":
            self.pi = np.asarray(prior.stationary, dtype=float)
            self.pi_support = self.pi > 0
            self.logpi = _log(self.pi)

    # -- powers and tables up to L ------------------------------------------
    def power(self, j: int) -> np.ndarray:
        P, pows = self.P, self.pows
        while len(pows) <= j:
            if self.clock is not None and len(pows) % 1024 == 0:
                self.clock.check(detail=f" (P^{len(pows)} of P^{j} computed for quilts of up to {j} nodes)")
            nxt = pows[-1] @ P
            if nxt.min() < _TINY:  # rare: tell exact zeros from underflow before trusting a zero
                self._check_underflow(nxt, self._reach_power(len(pows)), f"P^{len(pows)}")
            pows.append(nxt)
        return pows[j]

    def _check_underflow(self, values, reach: np.ndarray, what: str):
        """Raise if an entry is structurally positive (``reach``) but numerically below _TINY.

        Exact zeros are legitimate and handled exactly; a positive probability that
        underflows would be silently treated as impossible, which could understate
        an influence, so it is refused.
        """
        bad = reach & (np.asarray(values) < _TINY)
        if bad.any():
            raise NumericalError(
                f"{what} of chain {self.prior.name!r} has a positive entry below {_TINY:g} "
                "(floating-point underflow), so its influence cannot be computed exactly; "
                "smooth or merge the nearly unreachable states."
            )

    def _reach_power(self, j: int) -> np.ndarray:
        r"""Boolean :math:`P^j > 0` by structure (which states are reachable in exactly :math:`j` steps).

        The last one is kept, so that the powers :math:`P^1, P^2, \dots` with zeros cost one step each.
        """
        step = (self.P > 0).astype(np.int64)
        have, r = 0, np.eye(self.k, dtype=np.int64)
        if self._reach is not None:
            last, reach = self._reach
            if last <= j:
                have, r = last, reach
        for _ in range(j - have):
            r = np.minimum(r @ step, 1)
        self._reach = (j, r)
        return r > 0

    def _reach_marginal(self, i: int) -> np.ndarray:
        """Boolean :math:`P(X_i = x) > 0` by structure for a vector initial distribution."""
        r = (np.asarray(self.prior.initial, dtype=float) > 0).astype(np.int64)
        step = (self.P > 0).astype(np.int64)
        for _ in range(i - 1):
            r = np.minimum(r @ step, 1)
        return r > 0

    def logpow(self, j: int) -> np.ndarray:
        r""":math:`\log P^j` (logs taken in one batch for every missing power)."""
        have = len(self.logpows)
        if have <= j:
            self.power(j)
            self.logpows.extend(_log(np.stack(self.pows[have : j + 1])))
        return self.logpows[j]

    def ensure(self, L: int):
        have = self.B.shape[0] - 1
        if L <= have:
            return
        self.power(L)
        lp = _log(np.stack(self.pows[have + 1 : L + 1]))  # log P^(have+1) .. log P^L
        if len(self.logpows) <= L:
            self.logpows.extend(lp[len(self.logpows) - have - 1 :])
        n = L - have
        AB = _ratio_max_chunked(np.concatenate([lp, np.swapaxes(lp, -1, -2)]))  # A and B in one pass
        self.A_full = np.concatenate([self.A_full, AB[:n]])
        self.B = np.concatenate([self.B, AB[n:]])
        self.Bmax = np.concatenate([self.Bmax, _max_kk(AB[n:])])

    def A(self, a: int, support) -> np.ndarray:
        if support is None or self.paper or support.all():
            return self.A_full[a]
        key = (a, support.tobytes())
        t = self._A_cache.get(key)
        if t is None:
            t = ratio_max(self.logpow(a), support)
            self._A_cache[key] = t
        return t

    # -- node-level quantities ------------------------------------------------
    def marginal(self, i: int) -> np.ndarray:
        while len(self.mu) < i:
            nxt = self.mu[-1] @ self.P
            if nxt.min() < _TINY:
                step = len(self.mu) + 1
                self._check_underflow(nxt, self._reach_marginal(step), f"the marginal of X{step}")
            self.mu.append(nxt)
        return self.mu[i - 1]

    def node(self, i: int, amax: int):
        r"""Secret values and supports of node :math:`i`.

        Returns (V, C, sup, full): the valid secret values V (bool, k),
        :math:`C[x, x'] = \sup \log P(X_i = x') / P(X_i = x)` over the member's initial distributions
        (0 on invalid pairs), the supports (amax, k) of :math:`X_{i-a}` for :math:`a = 1, \dots, a_{\max}`
        (None if all full) and ``full = V.all()``.
        """
        k = self.k
        if self.kind == "stationary":
            V = self.pi_support
            pair = V[:, None] & V[None, :]  # invalid pairs (a value of probability 0) are masked later
            C = np.subtract(self.logpi[None, :], self.logpi[:, None], out=np.zeros((self.k, self.k)), where=pair)
            full = bool(V.all())
            return V, C, None if full else np.broadcast_to(V, (amax, k)), full
        if self.kind == "vector":
            mu = self.marginal(i)
            V = mu > 0
            lm = _log(mu)
            pair = V[:, None] & V[None, :]
            C = np.subtract(lm[None, :], lm[:, None], out=np.zeros((k, k)), where=pair)  # invalid pairs masked later
            if amax == 0:
                return V, C, None, bool(V.all())
            sup = np.asarray(self.mu[i - amax - 1 : i - 1][::-1]) > 0  # mu_{i-1}, ..., mu_{i-amax}
            return V, C, None if sup.all() else sup, bool(V.all())
        # "any": every initial distribution of the simplex (appendix C.4)
        node = self._any_nodes.get(i)
        if node is None:
            node = self._any_nodes[i] = self._any_node(i)
        V, C, full = node
        if amax == 0 or self._any_full(i - amax - 1):
            return V, C, None, full
        sup = np.asarray([self.pows[i - a - 1].sum(axis=0) > 0 for a in range(1, amax + 1)])
        return V, C, sup, full

    def _any_node(self, i: int):
        """(V, C, V.all()) of node i for an ``"any"`` initial distribution."""
        # from the computed power, not from _any_full: a column of P^(i-1) may underflow to zero
        V = self.power(i - 1).sum(axis=0) > 0
        full = bool(V.all())
        if i == 1:
            C = _first_node_C(self.k)
        elif i - 1 < self.A_full.shape[0]:
            C = self.A_full[i - 1].T  # ratio_max(log P^(i-1)), already tabulated by ensure()
        else:
            C = ratio_max(self.logpow(i - 1)).T
        if not full:
            C = np.where(V[:, None] & V[None, :], C, 0.0)
        return V, C, full

    def _any_full(self, j: int) -> bool:
        r"""True if every state is reachable at every time :math:`\ge j + 1` (:math:`P^j` has no zero column)."""
        if not hasattr(self, "_full_from"):
            self._full_from = None
            for t in range(1, self.k * self.k + 2):
                if (self.power(t).sum(axis=0) > 0).all():
                    # for t >= 1 a full P^t means P has no zero column, so every later power is full
                    self._full_from = t
                    break
        f = self._full_from
        return f is not None and (j >= f or (j == 0 and f <= 1))


class ChainQuiltSearch:
    r"""Best-first search of the Lemma 4.6 quilts of the nodes of a finite chain class.

    The tables of equation (5) (powers of :math:`P`, :math:`A_a` and :math:`B_b` per member) are built once
    up to the largest offset :math:`L` (:meth:`ensure`) and shared by every node searched.

    Parameters
    ----------
    chain_class : ChainPriorClass
    epsilon : float
        The privacy parameter of the scores :math:`\mathrm{card}(X_N) / (\epsilon - e)` (attribute ``eps``).
    paper_convention : bool
        Count left-end states of probability zero as the paper's running example does.
    """

    def __init__(self, chain_class: ChainPriorClass, *, epsilon: float, paper_convention: bool = False):
        self.cc = chain_class
        self.T = chain_class.length
        self.k = chain_class.k
        self.eps = epsilon
        self.members = [_Member(m, paper_convention) for m in chain_class.members]
        self.L = 0
        self.evaluations = 0
        self._clock: ChainClock | None = None

    @property
    def clock(self) -> ChainClock | None:
        """The time budget checked by the loops over nodes and powers (None: no limit)."""
        return self._clock

    @clock.setter
    def clock(self, value: ChainClock | None):
        self._clock = value
        for m in self.members:
            m.clock = value

    def ensure(self, ell: int):
        r"""Build the tables of equation (5) up to offset :math:`L = \min(l, T - 1)`, checking their memory first.

        Each member keeps :math:`P^j`, :math:`\log P^j` (two arrays of :math:`k^2` doubles and their headers),
        :math:`A_j` and :math:`B_j` for :math:`j \le L`, and a batch's temporaries and copies: about
        :math:`L (96 k^2 + 400)` bytes; a node search ranks up to :math:`L^2` two-sided quilts (40 bytes
        each).  Refused beyond :data:`~puffgm.chains.budget.MEMORY_LIMIT`.
        """
        L = min(ell, self.T - 1)
        if L > self.L:
            check_memory(float(L) * (96 * self.k * self.k + 400) * len(self.members) + 40.0 * L * L,
                         f"MQMExact's tables of equation (5) for quilts of up to {L} nodes (k = {self.k})",
                         "give a smaller max_length (quilts of fewer nodes) or a larger epsilon")
            for m in self.members:
                m.ensure(L)
            self.L = L

    def node_tables(self, i: int, amax: int, bmax: int):
        r"""Per member: ``G[a-1]`` :math:`= A_a + C` and ``Bm[b-1]`` (masked); ``DL``, ``DR`` over :math:`\Theta`.

        Unmasked tables (every secret value valid, full left supports) are
        views of the member's tables, not copies; callers must not write to them.
        """
        k = self.k
        Gs, Bs, DL, DR = [], [], None, None
        for m in self.members:
            V, C, sup, full = m.node(i, amax)
            if full and (sup is None or m.paper):
                # every pair (x, x') is a secret pair: nothing to mask
                G = m.A_full[1 : amax + 1] + C if amax else np.zeros((0, k, k))
                Bm = m.B[1 : bmax + 1]
                dl = _max_kk(G)
                dr = m.Bmax[1 : bmax + 1]
            else:
                pair = V[:, None] & V[None, :]
                if amax:
                    if sup is None or m.paper:
                        G = m.A_full[1 : amax + 1] + C
                    else:
                        G = np.stack([m.A(a, sup[a - 1]) for a in range(1, amax + 1)]) + C
                    G = np.where(pair, G, _NEG)
                else:
                    G = np.zeros((0, k, k))
                Bm = np.where(pair, m.B[1 : bmax + 1], _NEG) if bmax else np.zeros((0, k, k))
                dl, dr = _max_kk(G), _max_kk(Bm)
            DL = dl if DL is None else np.maximum(DL, dl)
            DR = dr if DR is None else np.maximum(DR, dr)
            Gs.append(G)
            Bs.append(Bm)
        assert DL is not None and DR is not None  # a class has at least one member
        # max-influence is >= 0 (x = x' gives 0); guard nodes without any valid value
        return Gs, Bs, np.maximum(DL, 0.0), np.maximum(DR, 0.0)

    def search(self, i: int, ell: int, cap: float = -math.inf, seed=None):
        r"""Best quilt of node :math:`i` among :math:`\operatorname{card}(X_N) \le l` (plus the trivial quilt).

        Returns a :class:`ChainQuiltResult`; the first best in the order
        trivial, left (:math:`a` ascending), right (:math:`b` ascending), two-sided (lower
        bound ascending, then :math:`a, b`) wins ties.  With ``cap``, the search may
        stop at the first quilt scoring :math:`\le` ``cap`` (then the score is an upper
        bound on the node's optimum, itself :math:`\le` ``cap``); without, it is the optimum.
        ``seed``: a :class:`ChainQuiltResult` of a quilt of node :math:`i` with
        :math:`\operatorname{card} \le l`, the best known so far (prunes the search; the optimum's score
        is unchanged, a tie may be reported with the seed's quilt).
        """
        T, eps = self.T, self.eps
        amax = max(0, min(i - 1, ell, self.L))
        bmax = max(0, min(T - i, ell, self.L))
        Gs, Bs, DL, DR = self.node_tables(i, amax, bmax)
        best = ChainQuiltResult(T / eps, "trivial", 0, 0, 0.0, T)
        if seed is not None and seed.score < best.score:
            best = seed
        # one-sided quilts with card(X_N) <= l: card grows with a (with b), so they are a prefix
        n = min(amax, ell - (T - i))  # card = T - i + a
        if n > 0:
            j, s, d = _first_min(T - i + 1, DL[:n].tolist(), eps)
            if s < best.score:
                best = ChainQuiltResult(s, "left", j + 1, 0, d, T - i + 1 + j)
        n = min(bmax, ell - i + 1)  # card = i + b - 1
        if n > 0:
            j, s, d = _first_min(i, DR[:n].tolist(), eps)
            if s < best.score:
                best = ChainQuiltResult(s, "right", 0, j + 1, d, i + j)
        if amax and bmax:
            ai0, bi0, card = _pairs(amax, bmax, ell)
            lb = _score(card, np.maximum(DL[ai0], DR[bi0]), eps)
            cand = np.flatnonzero(lb < best.score)
            if cand.size:
                cand = cand[np.argsort(lb[cand], kind="stable")]
                aa, bb, cards = ai0[cand], bi0[cand], card[cand]
                lbs = lb[cand].tolist()
                pos, batch = 0, 64
                while pos < cand.size and lbs[pos] < best.score and best.score > cap:
                    if self._clock is not None:
                        self._clock.check(detail=f" (searching the quilts of X{i}, l = {ell})")
                    ai, bi = aa[pos : pos + batch], bb[pos : pos + batch]
                    d2 = None
                    for G, Bm in zip(Gs, Bs, strict=True):
                        dm = _max_kk(G[ai] + Bm[bi])
                        d2 = dm if d2 is None else np.maximum(d2, dm)
                    assert d2 is not None  # a class has at least one member
                    d2 = np.maximum(d2, 0.0)
                    self.evaluations += ai.size
                    s = _score(cards[pos : pos + batch], d2, eps)
                    j = int(np.argmin(s))
                    if s[j] < best.score:
                        a, b = int(ai[j]) + 1, int(bi[j]) + 1
                        best = ChainQuiltResult(float(s[j]), "two", a, b, float(d2[j]), a + b - 1)
                    pos += batch
                    batch = min(batch * 2, 4096)
        return best


    def quilt_score(self, i: int, a: int, b: int):
        r"""(score, influence) of one Lemma 4.6 quilt of node :math:`i`.

        Its left end is :math:`X_{i-a}` (:math:`a = 0`: none), its right end :math:`X_{i+b}`.
        Equation (5) for the one quilt, as :meth:`search` evaluates it (same masking
        of invalid secret values and left-end supports); needs :math:`a, b \le` ``self.L``.
        """
        T, eps = self.T, self.eps
        d = 0.0
        for m in self.members:
            if m.kind == "vector":  # only the left end's support, not the whole (a, k) stack
                V, C, _, full = m.node(i, 0)
                left = m.marginal(i - a) > 0 if a else None
                sup_a = None if (left is None or left.all()) else left
            else:
                V, C, sup, full = m.node(i, a)
                sup_a = None if sup is None else sup[a - 1]
            tot: float | np.ndarray = 0.0
            with np.errstate(invalid="ignore"):  # inf - inf: treated as +inf below (never understated)
                if a:
                    A = m.A_full[a] if (sup_a is None or m.paper) else m.A(a, sup_a)
                    tot = A + C
                if b:
                    tot = tot + m.B[b]
            tot = np.where(V[:, None] & V[None, :], np.where(np.isnan(tot), math.inf, tot), _NEG)
            d = max(d, float(tot.max()))
        card = (a + b - 1) if (a and b) else (T - i + a) if a else (i + b - 1)
        return (card / (eps - d) if d < eps else math.inf), d

    def share_tables(self, other: ChainQuiltSearch):
        """Use the power and equation-(5) tables of ``other`` (same transition matrix P, one member each)."""
        src, dst = other.members[0], self.members[0]
        for name in ("pows", "logpows", "A_full", "B", "Bmax"):
            setattr(dst, name, getattr(src, name))
        self.L = other.L


def _osc(log_u: np.ndarray, log_v: np.ndarray) -> float:
    """Hilbert's projective distance max(log u - log v) - min(log u - log v) of two positive vectors."""
    r = log_u - log_v
    return float(r.max() - r.min())


#: Unit roundoff of float64.
_U = 2.0**-53


def _log_error(n_products: int, k: int, logs: np.ndarray) -> float:
    r"""Bound on :math:`|\text{computed} - \text{exact}|` of a log-ratio oscillation after ``n_products`` products.

    Each vector-matrix product of non-negative numbers has relative error :math:`\le \gamma_k = k u / (1 - k u)`
    per step, so the computed vector is within :math:`(1 + \gamma_k)^n` of the exact one entrywise;
    a log of a relative error :math:`\theta` is within :math:`1.01 |\theta|`; two logs enter an
    oscillation (max minus min), and each log evaluation and subtraction adds a few ulps
    of the largest magnitude.
    """
    g = k * _U / (1 - k * _U)
    rel = math.expm1(n_products * math.log1p(g))
    mag = float(np.max(np.abs(logs[np.isfinite(logs)]))) if logs.size else 0.0
    return 2 * 1.01 * rel + 8 * _U * (mag + 1.0)


def _birkhoff_gap(logQ: np.ndarray, rel: float) -> float:
    r"""Certified lower bound on :math:`1 - \tau(Q)`, Birkhoff's contraction coefficient of a positive matrix :math:`Q`.

    For :math:`v \mapsto vQ` the image of the positive cone is spanned by the rows of :math:`Q`, whose projective
    diameter is :math:`\Delta = \max_{i,j,x,y} \log Q[i,x] Q[j,y] / (Q[i,y] Q[j,x])`; Birkhoff's theorem gives
    :math:`d_H(uQ, vQ) \le \tanh(\Delta / 4)\, d_H(u, v)`, and
    :math:`1 - \tanh(\Delta / 4) = 2 / (\exp(\Delta / 2) + 1)`.
    ``logQ`` is the log of a computed Q whose entries are within relative ``rel`` of the exact ones;
    every rounding is taken against the bound.
    """
    mag = float(np.max(np.abs(logQ)))
    delta = 0.0
    for row in logQ:  # d_H(Q[i], Q[j]) for every j, one row i at a time (k^2 memory)
        d = row - logQ
        delta = max(delta, float(np.max(d.max(axis=1) - d.min(axis=1))))
    delta += 4 * 1.01 * rel + 16 * _U * (mag + 1.0)
    return 2.0 / (math.exp(min(delta / 2, 700.0)) + 1.0) * (1 - 8 * _U)


def stationary_error(P: np.ndarray, pi: np.ndarray, max_power: int = 64) -> float:
    r"""Certified bound on Hilbert's projective distance :math:`d_H(\pi, \pi^*)` from a computed ``pi`` to the true law.

    With :math:`Q = P^m` strictly positive and :math:`\tau = \tanh(\Delta(Q) / 4) < 1` (Birkhoff),
    :math:`\pi^* Q = \pi^*` gives

    $$
    d_H(\pi, \pi^*) \le d_H(\pi, \pi Q) + d_H(\pi Q, \pi^* Q) \le d_H(\pi, \pi Q) + \tau\, d_H(\pi, \pi^*),
    $$

    so :math:`d_H(\pi, \pi^*) \le d_H(\pi, \pi Q) / (1 - \tau)` (Seneta, "Non-negative Matrices and Markov
    Chains", section 3.1).  The powers :math:`m = m_0, 2 m_0, 4 m_0, \dots \le` ``max_power`` (:math:`m_0` the
    first with :math:`P^m > 0`) are tried and the least bound kept; floating-point error in :math:`\pi Q` is
    bounded by :func:`_log_error` and that of :math:`Q` entrywise.  Returns +inf when no :math:`P^m` with
    :math:`m \le` ``max_power`` is positive (periodic or reducible :math:`P`) or ``pi`` has a zero.

    This is what lets the fixed-start scan of :class:`MQMExact` bound every later node with a
    drift independent of :math:`T`: for :math:`j \ge i`,
    :math:`d_H(\mu_j, \pi) \le d_H(\mu_i, \pi) + 2\, d_H(\pi, \pi^*)` (non-expansion of :math:`P`
    towards the invariant :math:`\pi^*`).
    """
    k = P.shape[0]
    if not (pi > 0).all():
        return math.inf
    g = k * _U / (1 - k * _U)
    logpi = _log(pi)
    Q, v, best, want = np.eye(k), pi.copy(), math.inf, None
    for m in range(1, max_power + 1):
        Q, v = Q @ P, v @ P
        if want is None and (Q > 0).all() and (v > 0).all():
            want = m
        if want is None or m != want:
            continue
        want = 2 * m
        rel = math.expm1((m - 1) * math.log1p(g))
        lv = _log(v)
        gap = _birkhoff_gap(_log(Q), rel)
        if gap > 0:
            best = min(best, (_osc(lv, logpi) + _log_error(m, k, lv)) / gap * (1 + 4 * _U))
    return best


@lru_cache(maxsize=8)
def _names(T: int) -> tuple:
    """("X1", ..., "XT"), built once per length."""
    return tuple(node_name(j) for j in range(1, T + 1))


def quilt_choice(T: int, i: int, res, materialise: bool) -> QuiltChoice:
    r"""The :class:`~puffgm.core.results.QuiltChoice` of node :math:`X_i` from its search result.

    Parameters
    ----------
    T : int
        The chain length.
    i : int
        The node (1-based).
    res : ChainQuiltResult
        The node's best quilt as :meth:`ChainQuiltSearch.search` returns it.
    materialise : bool
        Build the names of the nearby and remote sets (set it for :math:`T \le` ``PER_NODE_LIMIT`` only).
    """
    kind, a, b = res.kind, res.a, res.b
    quilt: tuple[str, ...]
    if kind == "two":
        quilt = (node_name(i - a), node_name(i + b))
        lo, hi = i - a + 1, i + b - 1
    elif kind == "left":
        quilt = (node_name(i - a),)
        lo, hi = i - a + 1, T
    elif kind == "right":
        quilt = (node_name(i + b),)
        lo, hi = 1, i + b - 1
    else:
        quilt = ()
        lo, hi = 1, T
    if materialise:  # T <= PER_NODE_LIMIT
        names = _names(T)
        nearby = names[lo - 1 : hi]
    else:  # never build all T names of a long chain; only the nearby ones, when few
        names = None
        nearby = tuple(node_name(j) for j in range(lo, hi + 1)) if hi - lo < 100000 else ()
    n_remote = T - (hi - lo + 1) - len(quilt)
    remote = ()
    if names is not None:  # materialise
        # X1..X_{lo-1} and X_{hi+1}..XT without the quilt, whose nodes are X_{lo-1} (left end) and X_{hi+1} (right end)
        head = names[: lo - 2] if kind in ("two", "left") else names[: lo - 1]
        tail = names[hi + 1 :] if kind in ("two", "right") else names[hi:]
        remote = head + tail
    return QuiltChoice(
        node=node_name(i), quilt=quilt, nearby=nearby, remote=remote, max_influence=res.influence, score=res.score,
        n_remote=n_remote, witness=None,
    )


class MQMExact:
    r"""Algorithm 3 (MQMExact) of Song, Wang and Chaudhuri for a chain class :math:`\Theta`.

    Parameters
    ----------
    chain_class : ChainPriorClass or InfiniteChainClass
        :math:`\Theta`; members may have vector, ``"stationary"`` or ``"any"`` initial
        distributions.  An infinite class such as a
        :class:`~puffgm.chains.ChainParameterBox` is calibrated by its own
        certified supremum (:func:`puffgm.chains.box.certified_mqm_exact`).
    max_length : int, optional
        Algorithm 3's :math:`l`: only quilts with :math:`\mathrm{card}(X_N) \le l` (plus the trivial
        quilt) are searched.  Default: chosen adaptively so that the result is
        the exact optimum over the Lemma 4.6 family.
    paper_convention : bool
        Count left-end states of probability zero as the paper's running
        example does (reproduces 13.0219; not the library's exact value).
    per_node : bool or None
        Search and report every node's active quilt (default: when :math:`T \le 200`; it costs
        one search per node, where the shortcuts search :math:`O(1)` or :math:`O(l)` nodes).
    mixing : bool
        Fixed (vector) start, not ``per_node``: search the early nodes exactly and bound
        every later node by the stationary chain at :math:`\epsilon - \Omega`, where :math:`\Omega` is a
        certified bound on the Hilbert distance between the marginals and :math:`\pi` (see
        :func:`_mixing_run`); the cost stops growing with :math:`T`.  ``False`` searches every node.
    mixing_rtol : float
        Stop the early scan once the bound is within this relative distance of the
        stationary value (default 1e-6), unless it is already exact before.
    time_limit : float, optional
        Seconds the calibration may take (None or 0: no limit).  A road that searches
        every node projects its time from :math:`T` before it starts and refuses
        (:class:`~puffgm.exceptions.TimeLimitError`, one sentence with the projected
        seconds) when the projection is over the limit; every loop over the nodes checks
        the deadline.  Whatever the limit, a projected working memory above
        :data:`puffgm.chains.budget.MEMORY_LIMIT` is refused before the work starts
        (:class:`~puffgm.exceptions.InferenceLimitError`).

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass, MQMExact
    >>> th = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial=[1, 0], length=100)
    >>> round(MQMExact(th).calibrate(epsilon=1.0).sigma_max, 4)
    12.9341
    """

    def __init__(self, chain_class: ChainPriorClass, *, max_length=None, paper_convention: bool = False,
                 per_node=None, mixing: bool = True, mixing_rtol: float = 1e-6, time_limit=None):
        self._box = isinstance(chain_class, InfiniteChainClass)
        if self._box and (paper_convention or max_length is not None):
            raise ParameterError(
                "paper_convention and max_length apply to finite chain classes, not to a parameter box."
            )
        if not isinstance(chain_class, (ChainPriorClass, InfiniteChainClass)):
            raise ParameterError(
                f"MQMExact needs a ChainPriorClass; got {type(chain_class).__name__}."
            )
        self.chain_class = chain_class
        self.max_length = None if max_length is None else check_positive_int(max_length, "max_length", "MQMExact")
        self.paper_convention = bool(paper_convention)
        self.per_node = per_node
        self.mixing = bool(mixing)
        self.mixing_rtol = check_positive_finite(mixing_rtol, "mixing_rtol", "MQMExact")
        self.time_limit = check_time_limit(time_limit, "MQMExact")
        #: The time budget of the calibration under way (None: no limit), set by calibrate; a family's
        #: members share their family's.
        self.clock: ChainClock | None = None

    def calibrate(self, *, epsilon: float, lipschitz: float = 1.0,
                  options: Mapping | None = None) -> CalibrationResult:
        r"""Noise scale :math:`\sigma_{\max}` (per unit :math:`L`) and the worst node's active quilt.

        Parameters
        ----------
        epsilon : float
            The Pufferfish privacy parameter (:math:`> 0`).
        lipschitz : float
            The Lipschitz constant :math:`L` of the query; the Laplace scale is :math:`L \sigma_{\max}`.
        options : mapping, optional
            The calibration options as the user gave them to :func:`puffgm.calibrate`
            (``PriorKind.calibrate`` passes them down), recorded on the result
            (:attr:`~puffgm.core.results.CalibrationResult.options`, part of the composition key
            of its releases).  None (default) records none: the releases of the result then
            compose only with releases of an equal calibration.

        Returns
        -------
        CalibrationResult
            :math:`\sigma_{\max} = \max_{X_i} \min_Q \operatorname{card}(X_N) / (\epsilon - e_\Theta(X_Q \mid X_i))`,
            the min over the Lemma 4.6 quilts of each node (Algorithm 3, Theorem 4.3).
        """
        eps = check_positive_finite(epsilon, "epsilon", "MQMExact.calibrate")
        lipschitz = check_positive_finite(lipschitz, "lipschitz", "MQMExact.calibrate")
        cc = self.chain_class
        if isinstance(cc, InfiniteChainClass):  # self._box
            return cc.certified_exact(epsilon=eps, lipschitz=lipschitz, options=options)
        check_chain_length(cc.length, "MQMExact")
        if self.clock is None and self.time_limit is not None:
            self.clock = ChainClock(self.time_limit, f"MQMExact on {_describe(cc)}",
                                     "use a shorter chain, a larger epsilon or max_length")
        try:
            return self._calibrate_class(eps, lipschitz, options)
        finally:
            self.clock = None

    def _calibrate_class(self, eps: float, lipschitz: float, options: Mapping | None) -> CalibrationResult:
        """Every member's node search through the one outer loop (:func:`puffgm.mechanisms.mqm_loop.run_mqm`).

        A finite family is the max over members of each member's own optimum: Pufferfish
        privacy is a condition per prior and the proofs of Theorems 4.3/4.4 fix theta first,
        so each member may use its own active quilts (as Algorithm 3 does); an
        ``initial="any"`` member is itself a class and keeps the sup over its initial
        distributions per quilt (appendix C.4).
        """
        cc = self.chain_class
        runs: list[_MemberRun] = []

        def search_prior(t: int, member: ChainPrior) -> dict:
            runs.append(_run_member(self if len(cc) == 1 else self._member(member), eps))
            return runs[-1].choices

        outcome = run_mqm(cc.members, None, search_prior, epsilon=eps, largest_group=cc.length,
                          node_key=_node_index)
        k = outcome.worst_prior
        notes = list(cc.notes) + [n for n in runs[k].notes if n not in cc.notes]
        if outcome.no_gain:
            notes.append("no gain over group DP for the worst node")
        details = dict(runs[k].details)
        if len(cc) > 1:
            details.update({"n_chains": len(cc), "worst_member": k, "per_member_sigma": outcome.per_prior,
                            "influence_evaluations": int(sum(r.details["influence_evaluations"] for r in runs))})
        return outcome.result(
            epsilon=eps, lipschitz=lipschitz, method="exact",
            per_node=outcome.per_node if all(r.per_node for r in runs) else (), n_nodes=cc.length,
            fingerprint=cc.fingerprint, theorem=THEOREM_EXACT, notes=tuple(notes), details=details,
            graph=QuiltGraph("chain", length=int(cc.length)), options=options,
        )

    def _member(self, member: ChainPrior) -> MQMExact:
        """MQMExact on one member of a family, with the family's options and time budget."""
        sub = MQMExact(ChainPriorClass([member]), max_length=self.max_length, paper_convention=self.paper_convention,
                       per_node=self.per_node, mixing=self.mixing, mixing_rtol=self.mixing_rtol)
        sub.clock = self.clock  # one budget for the whole family
        return sub


def _run_member(mech: MQMExact, eps: float) -> _MemberRun:
    """MQMExact on a one-member class: the node search of Algorithm 3 with the shortcuts of the module docstring."""
    cc = mech.chain_class
    T = cc.length
    want_nodes = mech.per_node if mech.per_node is not None else T <= PER_NODE_DEFAULT_LIMIT
    run = _ChainRun(mech, eps, want_nodes)
    notes = list(cc.notes)
    if mech.paper_convention:
        notes.append("paper convention: left-end states of probability zero are counted (not exact)")
    ell, (i, r, allres), exact = run.choose_length(notes)
    mix_info = run.mix_info
    if mix_info.get("exact") is False:
        exact = False
        notes.append(
            "fixed start: nodes after X{} bounded by the stationary chain at epsilon - {:.3g} "
            "(certified mixing bound): valid, within {:.3g} of the exact optimum".format(
                mix_info["mixing_node"], mix_info["mixing_error"], mix_info["certified_gap"]))
    materialise = T <= PER_NODE_LIMIT
    per_node = allres is not None and want_nodes
    if per_node:  # every node's active quilt: the outer loop picks the worst (the same as run's)
        choices = {c.node: c for c in (quilt_choice(T, j + 1, x, materialise) for j, x in enumerate(allres))}
    else:
        worst = quilt_choice(T, i, r, materialise)
        choices = {worst.node: worst}
    details = {
        "l": int(ell),
        "exact_optimum": bool(exact),
        "strategy": run.strategy,
        "k": cc.k,
        "n_chains": len(cc),
        "initial": ",".join(sorted(cc.initial_kinds)),
        "paper_convention": mech.paper_convention,
        "influence_evaluations": int(run.search.evaluations),
        "worst_quilt_kind": r.kind,
        **mix_info,
    }
    return _MemberRun(choices, per_node, tuple(notes), details)


@dataclass(frozen=True)
class _MemberRun:
    """What MQMExact found on one member: active quilts (every node's, or the worst node's), notes, details."""

    choices: dict
    per_node: bool
    notes: tuple
    details: dict


def _node_index(name: str) -> int:
    """The position i of the chain node ``"X<i>"`` (the node order of the outer loop)."""
    return int(name[1:])


# -- fixed start: exact early nodes, certified stationary bound for the rest -------------
def _stationary_twin(search: ChainQuiltSearch, eps: float, paper_convention: bool):
    """A search over the stationary chain with the same P and T, or None if pi is not unique and positive."""
    prior = search.members[0].prior
    try:
        pi = np.asarray(prior.stationary, dtype=float)
    except PriorError:
        return None
    if not (pi > 0).all() or not (np.asarray(prior.transition) > 0).any(axis=0).all():
        # transient states: their marginals vanish, influences need not converge; and a zero
        # column of P would break "mu_i > 0 implies mu_j > 0 for j > i" (non-expansion needs it)
        return None
    twin = ChainPrior(prior.transition, "stationary", prior.length, prior.states, prior.name)
    stat = ChainQuiltSearch(ChainPriorClass([twin]), epsilon=eps, paper_convention=paper_convention)
    m = stat.members[0]
    # eta bounds d_H(pi P, pi) for the computed pi (exactly 0 for the exact pi); drift bounds
    # d_H(mu_j, pi) - d_H(mu_i, pi) for every j >= i, whatever j - i (2 d_H(pi, pi*))
    m.eta = _osc(_log(m.pi @ m.P), m.logpi) + _log_error(1, m.k, m.logpi)
    m.drift = 2.0 * stationary_error(m.P, m.pi)
    return stat

def _mixing_run(search: ChainQuiltSearch, stat: ChainQuiltSearch, ell: int, eps: float, rtol: float):
    """Max over nodes of the fixed-start chain: exact early nodes, a certified bound for the rest.

    Returns (node, ChainQuiltResult, info) or None when the stationary twin's middle optimum is
    one-sided (Lemma C.9's analogue does not apply; the caller searches every node).

    Derivation (fixed start q, P with a unique positive stationary pi).  The marginal of X_i
    is mu_i = q P^(i-1).  In equation (5) the node enters only through
    C_i(x, x') = log mu_i(x') / mu_i(x) (the left-end support can only shrink the max).
    With r_i = log mu_i - log pi and Omega_i = max r_i - min r_i (Hilbert's projective
    distance d_H(mu_i, pi)), C_i(x, x') <= C_pi(x, x') + Omega_i, hence for every quilt

        e_i(X_Q | X_i) <= e_pi(X_Q | X_i) + Omega_i,
        score_i(Q, epsilon) <= score_pi(Q, epsilon - Omega_i),

    so sigma_i <= sigma_max^stationary(epsilon - Omega_i) (the stationary twin, same P
    and T, whose max over nodes the Lemma C.9 analogue gives from the middle node).
    A stochastic matrix never expands d_H (if a v <= u <= b v then a vP <= uP <= b vP),
    and pi P = pi, so Omega_j <= Omega_i for every j >= i: one bound covers all later
    nodes.  For the computed pi, d_H(pi P, pi) = eta may be positive; then
    Omega_j <= Omega_i + (j - i) eta, and floating-point error in mu_i is bounded by
    :func:`_log_error`.  Every term over-estimates, so the bound is safe.  Symmetrically
    e_i >= e_pi - Omega_i when every left end is past the first positive marginal, which
    gives the lower bound ``sigma_lower_bound`` from the middle node.

    The scan stops at the first checked node i with stationary(epsilon - Omega_i) <= the
    max over earlier nodes (then the result is exact), or with Omega_i small enough that the
    bound is within ``mixing_rtol`` of stationary(epsilon).  Early nodes are first tested
    with the previous node's and the stationary optimum's quilts: a node whose such quilt
    already scores below max(current max, stationary(epsilon)) cannot raise the result.
    """
    return _MixingScan(search, stat, ell, eps, rtol).run()


class _ChainRun:
    """MQMExact on a one-member class at one epsilon: the strategy, a run at quilt length l, and the choice of l."""

    def __init__(self, mech: MQMExact, eps: float, want_nodes: bool):
        cc = mech.chain_class
        self.mech = mech
        self.eps = eps
        self.T = cc.length
        self.search = ChainQuiltSearch(cc, epsilon=eps, paper_convention=mech.paper_convention)
        self.search.clock = mech.clock
        self.want_nodes = want_nodes
        self.mix_info: dict = {}
        self.strategy, self.stat = self._plan(cc.initial_kinds, want_nodes)

    def _plan(self, kinds, want_nodes: bool):
        """(strategy, stationary twin or None) from the kinds of initial distribution."""
        if kinds == {"stationary"}:
            strategy = "stationary shortcut (middle node, Lemma C.9 exact analogue)"
        elif kinds <= {"stationary", "any"}:
            strategy = "left scan (influence non-increasing in i for stationary/any initial distributions)"
        else:
            strategy = "every node"
        if want_nodes:
            strategy = "every node"
        stat = None
        if strategy == "every node" and not want_nodes and self.mech.mixing and kinds == {"vector"} and self.T > 2:
            stat = _stationary_twin(self.search, self.eps, self.mech.paper_convention)
            if stat is not None:
                strategy = "fixed start: exact early nodes + certified mixing bound"
        return strategy, stat

    def _every_node(self, ell: int):
        """The result of every node 1..T, and the (first) worst one: (node, result, results).

        The work is projected before it starts: T node searches of at least
        :data:`_NODE_SECONDS` each, and the memory of T results and marginals
        (:meth:`_check_every_node`); the deadline is checked every 64 nodes.
        """
        T, clock = self.T, self.search.clock
        self._check_every_node(ell)

        def tick(i: int) -> None:
            if clock is not None and i % 64 == 0:
                clock.check(i, T, f" ({i} of the {T} node searches done)")

        res = list(search_nodes(range(1, T + 1), lambda i: self.search.search(i, ell), tick=tick).values())
        j = worst_index([x.score for x in res])  # the first of the maxima (puffgm.core.ties)
        return j + 1, res[j], res

    def _check_every_node(self, ell: int):
        """Refuse a search of every node whose memory or least time is over the budget, before it starts."""
        T, k, clock = self.T, self.search.k, self.search.clock
        what = f"MQMExact on {_describe(self.mech.chain_class)}, searching every node because {self._why()},"
        per_node = _NODE_BYTES + 24 * k * k + (_NODE_BYTES if self.want_nodes else 0)
        check_memory(float(T) * per_node, what, "use a shorter chain or per_node=False")
        if clock is not None:  # each node ranks up to l^2 / 2 two-sided quilts
            L = min(ell, self.search.L)
            clock.project(float(T) * (_NODE_SECONDS + L * L * 5e-10))

    def _why(self) -> str:
        """Why every node is searched (for the refusals)."""
        mech = self.mech
        if self.want_nodes:
            return "every node's quilt was asked (per_node)"
        if self.stat is not None or self.strategy.startswith("stationary"):
            return "the stationary optimum's quilt is one-sided"
        if not mech.mixing:
            return "mixing=False was asked"
        return "its marginals need not converge to a positive stationary law (periodic or reducible P)"

    def run(self, ell: int, final: bool = False):
        """(worst node, its ChainQuiltResult, every node's results or None) with quilts of card(X_N) <= l.

        ``final``: l will not grow, so a one-sided middle optimum of a stationary
        chain falls back to searching every node instead of asking for a longer l.
        """
        T, search = self.T, self.search
        search.ensure(ell)
        if self.stat is not None:
            out = _mixing_run(search, self.stat, ell, self.eps, self.mech.mixing_rtol)
            self.mix_info.clear()
            if out is not None:
                i, r, info = out
                self.mix_info.update(info)
                return i, r, None
            self.mix_info["fallback"] = "the stationary twin's middle optimum is one-sided: every node searched"
            i, r, _ = self._every_node(ell)
            return i, r, None
        if self.strategy == "every node":
            return self._every_node(ell)
        if self.strategy.startswith("stationary"):
            mid = (T + 1) // 2
            r = search.search(mid, ell)
            if r.kind == "two" or T <= 1:
                return mid, r, None
            if ell < T and not final:
                # Lemma C.9 needs a two-sided optimum: look further before searching every node
                return mid, replace(r, score=math.inf), None
            i, r, _ = self._every_node(ell)
            return i, r, None
        worst_i, worst = 0, None
        for i in range(1, T + 1):
            if search.clock is not None:
                search.clock.check(detail=f" ({i - 1} of its {T} nodes searched from the left)")
            if i % 1024 == 0:
                _check_scan_memory(search, i, "searched from the left without finding a two-sided optimum")
            r = search.search(i, ell)
            if worst is None or r.score > worst.score:
                worst_i, worst = i, r
            if r.kind == "two":
                break
        return worst_i, worst, None

    def choose_length(self, notes: list):
        """(l, run(l), exact): Algorithm 3's l, given or doubled until no longer quilt can beat the optimum.

        A quilt with card(X_N) > l scores > l / epsilon, so once sigma_max <= (l + 1) / epsilon
        the result is the exact optimum.  A note is appended when a given ``max_length``
        leaves the result possibly above it.
        """
        T, eps, max_length = self.T, self.eps, self.mech.max_length
        if max_length is not None:
            ell = min(max_length, T)
            out = self.run(ell, final=True)
            _, worst, _ = out
            exact = worst.score <= (ell + 1) / eps or ell >= T
            if not exact:
                notes.append(f"quilts restricted to card(X_N) <= {ell}: valid, possibly above the exact optimum")
            return ell, out, exact
        ell = min(T, 16)
        clock = self.search.clock
        if self.stat is not None:  # the answer is at least the stationary twin's: start at its l
            mid = (T + 1) // 2
            while ell < T:
                if clock is not None:
                    clock.check(detail=f" (quilts of up to {ell} nodes searched)")
                self.search.ensure(ell)
                self.stat.share_tables(self.search)
                r0 = self.stat.search(mid, ell)
                if r0.kind == "two" and r0.score <= (ell + 1) / eps:
                    break
                ell = min(T, 2 * ell)
        out = self.run(ell)
        while True:
            _, worst, _ = out
            if worst.score <= (ell + 1) / eps or ell >= T:
                break
            if clock is not None:
                clock.check(detail=f" (quilts of up to {ell} nodes searched)")
            ell = min(T, 2 * ell)
            out = self.run(ell)
        return ell, out, True


class _MixingScan:
    """The node scan of :func:`_mixing_run` (fixed start, certified mixing bound), step by step."""

    KINDS = {(True, True): "two", (True, False): "left", (False, True): "right"}

    def __init__(self, search: ChainQuiltSearch, stat: ChainQuiltSearch, ell: int, eps: float, rtol: float):
        self.search, self.stat, self.ell, self.eps, self.rtol = search, stat, ell, eps, rtol
        self.T = search.T
        self.mid = (self.T + 1) // 2
        self.worst_i = 0
        self.worst: Any = None  # largest score found (exact, or an upper bound <= the cap)
        self.m_exact = -math.inf  # largest exact node optimum
        self.prev: tuple[int, int] | None = None  # (a, b) of the previous node's quilt
        self.ahead: dict = {}  # node -> exact result found by looking ahead
        self.rise = 0
        self.r0: Any = None  # the twin's middle-node result at epsilon (set by run)
        self.s0: Any = None  # its score and influence
        self.e_star: Any = None
        self.target = 0.0  # the mixing_rtol stop: Omega at most this (set by run)

    def stat_bound(self, e: float, any_kind: bool = False):
        """The stationary twin's middle-node result at epsilon ``e``; None if one-sided (unless ``any_kind``)."""
        stat = self.stat
        stat.eps = e
        try:
            r = stat.search(self.mid, self.ell)
        finally:
            stat.eps = self.eps
        return r if (any_kind or r.kind == "two") else None

    def candidates(self, i: int, cap: float):
        """(certificate <= cap or None, best seed) from the previous and the twin's quilts at node i."""
        search, T, r0 = self.search, self.T, self.r0
        seed = None
        for a, b in ((self.prev, (r0.a, r0.b)) if self.prev else ((r0.a, r0.b),)):
            if (a or b) and a < i and i + b <= T and max(a, b) <= search.L:
                card = (a + b - 1) if (a and b) else (T - i + a) if a else (i + b - 1)
                if card > self.ell:
                    continue
                sc, d = search.quilt_score(i, a, b)
                cand = ChainQuiltResult(sc, self.KINDS[(a > 0, b > 0)], a, b, d, card)
                if seed is None or sc < seed.score:
                    seed = cand
                if sc <= cap:
                    return cand, seed
        return None, seed

    def _too_long(self) -> bool:
        """True if the worst score shows that longer quilts are needed (the caller doubles l)."""
        return self.worst.score > (self.ell + 1) / self.eps and self.ell < self.T

    def _look_ahead(self, j: int) -> bool:
        """Search node j exactly (node optima are rising); True if longer quilts are needed.

        A higher max found further on certifies the nodes in between with one quilt
        evaluation each; the step doubles (1, 2, 4, ... 64) while the optima rise.
        """
        _, seed_j = self.candidates(j, -math.inf)
        rj = self.search.search(j, self.ell, seed=seed_j)
        self.ahead[j] = rj
        self.m_exact = max(self.m_exact, rj.score)
        if rj.score > self.worst.score:
            self.rise += 1
            self.worst_i, self.worst = j, rj
            return self._too_long()
        self.rise = 0  # past the peak: back to one node at a time
        return False

    def _node(self, i: int):
        """Node i's result (exact, or an upper bound <= the cap), or None if longer quilts are needed."""
        cap = self.s0 if self.worst is None else max(self.worst.score, self.s0)
        if i in self.ahead:
            return self.ahead.pop(i)
        # cheap certificate: the previous node's quilt, then the stationary optimum's, at node i
        r, seed = self.candidates(i, cap)
        j = i + min(2 ** self.rise, 64)
        if r is None and self.worst is not None and j < self.T and j not in self.ahead:
            if self._look_ahead(j):
                return None
            cap = max(self.worst.score, self.s0)
            r, seed = self.candidates(i, cap)
        if r is None:
            r = self.search.search(i, self.ell, cap=cap, seed=seed)
            if r.score > cap:
                self.m_exact = max(self.m_exact, r.score)
        return r

    def _mixing_bounds(self, i: int) -> list:
        """[(Omega_i, the twin's bound at epsilon - Omega_i)] for node i, each usable one, in the order to try.

        Omega_i bounds d_H(mu_j, pi) for every j >= i in two ways: with the step-by-step drift
        (T - i) eta of the computed pi, and with the drift 2 d_H(pi, pi*) that does not depend on
        T (:func:`stationary_error`).  The first is tried first; the second is tried too once the
        first alone exceeds the ``mixing_rtol`` target (then the first could never stop the scan
        within ``mixing_rtol``, which happens on long chains when eta > 0).
        """
        T, eps, sm = self.T, self.eps, self.stat.members[0]
        mu = self.search.members[0].marginal(i)
        if not (mu > 0).all() or i == T:
            return []
        lm = _log(mu)
        base = _osc(lm, sm.logpi) + _log_error(i - 1, self.search.k, lm)
        steps = float(T - i) * sm.eta
        drifts = [steps] + ([sm.drift] if sm.drift < steps and steps >= self.target else [])
        # the twin's optimum quilt (a*, b*), two-sided, shifted to every node (Lemma C.9's
        # analogue) bounds every node of the twin at epsilon - omega without a new search
        r0, out = self.r0, []
        for drift in drifts:
            omega = base + drift
            if omega < eps - self.e_star:
                score = r0.card / (eps - omega - self.e_star)
                out.append((omega, ChainQuiltResult(score, "two", r0.a, r0.b, self.e_star, r0.card)))
        return out

    def run(self):
        """(node, ChainQuiltResult, info) of the scan, or None (see :func:`_mixing_run`)."""
        T, eps = self.T, self.eps
        self.stat.share_tables(self.search)
        self.r0 = r0 = self.stat_bound(eps)
        if r0 is None:
            if self.ell < T:  # as the stationary shortcut does: look at longer quilts first
                return self.mid, ChainQuiltResult(math.inf, "trivial", 0, 0, 0.0, T), {}
            return None
        self.s0, self.e_star = r0.score, r0.influence
        rtol = self.rtol
        self.target = target = rtol * (eps - self.e_star) / (1 + rtol) if math.isfinite(self.s0) else 0.0
        stop: int | None = None
        bound: ChainQuiltResult | None = None
        omega = math.inf
        clock = self.search.clock
        for i in range(1, T + 1):
            if clock is not None:
                clock.check(detail=f" ({i - 1} of its {T} nodes searched before the mixing bound stopped the scan)")
            if i % 1024 == 0:
                _check_scan_memory(self.search, i, "searched before the mixing bound stopped the scan")
            r = self._node(i)
            if r is None:
                return self.worst_i, self.worst, {}
            if r.kind != "trivial":
                self.prev = (r.a, r.b)
            if self.worst is None or r.score > self.worst.score:
                self.worst_i, self.worst = i, r
                if self._too_long():
                    return self.worst_i, self.worst, {}
            for omega, bound in self._mixing_bounds(i):
                if bound.score <= self.worst.score or omega <= target:
                    stop = i
                    break
            if stop is not None:
                break
        return self._finish(stop, omega, bound, int(i if stop else T))

    def _finish(self, stop, omega: float, bound, searched: int):
        """The scan's (node, result, info): exact if every node was searched, else the certified bound."""
        worst_i, worst, m_exact = self.worst_i, self.worst, self.m_exact
        info: dict[str, Any] = {"early_nodes_searched": searched}
        if stop is None:  # every node searched
            exact = m_exact >= worst.score
            info.update({"mixing_node": int(self.T), "mixing_error": 0.0, "exact": bool(exact),
                         "sigma_lower_bound": float(m_exact), "certified_gap": float(worst.score - m_exact)})
            return worst_i, worst, info
        if bound.score > worst.score:  # a later node may be the worst: report the certified stationary quilt
            worst_i, worst = self.mid, replace(bound, influence=bound.influence + omega)
        # lower bound: the exact early nodes, and the middle node (e_mid >= e_pi - Omega)
        lower = m_exact
        ell, mid = self.ell, self.mid
        if m_exact < worst.score and mid - ell > stop and mid > stop:
            lo = self.stat_bound(self.eps + omega, any_kind=True)
            lower = max(lower, min(lo.score, (ell + 1) / self.eps))
        info.update({"mixing_node": int(stop), "mixing_error": float(omega), "stationary_bound": float(bound.score),
                     "early_nodes_max": float(m_exact), "sigma_lower_bound": float(lower),
                     "certified_gap": float(max(0.0, worst.score - lower)), "exact": bool(m_exact >= worst.score)})
        return worst_i, worst, info


def _check_scan_memory(search: ChainQuiltSearch, i: int, how: str) -> None:
    """Refuse a scan from the left whose per-node marginals and tables (kept up to node i) outgrow the budget.

    The scans that stop at an unknown node keep a marginal or a power of P, its log and the node's
    tables per node searched (about :math:`1200 + 48 k^2` bytes with the objects' headers); the memory is
    projected for the next 1024 nodes, so the refusal comes before the allocation.
    """
    check_memory(float(i + 1024) * (1200 + 48 * search.k * search.k) * len(search.members),
                 f"MQMExact on {_describe(search.cc)}, with {i} nodes {how},",
                 "use a shorter chain or a time limit")


def _describe(cc) -> str:
    """``chain 'name' (T = ..., k = ...)`` or ``a family of n chains (T = ..., k = ...)`` for messages."""
    who = f"chain {cc.members[0].name!r}" if len(cc.members) == 1 else f"a family of {len(cc.members)} chains"
    return f"{who} (T = {cc.length}, k = {cc.k})"


def mqm_exact(chain_class: ChainPriorClass, *, epsilon: float, lipschitz: float = 1.0, **kwargs) -> CalibrationResult:
    """Shorthand for ``MQMExact(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)``."""
    return MQMExact(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)


def chain_max_influence(chain_class: ChainPriorClass, node: int, quilt, *, paper_convention: bool = False) -> float:
    r""":math:`e_\Theta(X_Q \mid X_i)` for a Lemma 4.6 quilt of node :math:`i` (1-based), by equation (5).

    ``quilt`` is a tuple of node indices: ``(i-a, i+b)``, ``(i-a,)``, ``(i+b,)`` or ``()``.
    """
    T = chain_class.length
    i = int(node)
    q = tuple(int(v) for v in quilt)
    if not 1 <= i <= T or any(not 1 <= v <= T or v == i for v in q):
        raise ParameterError(f"Node {i} or quilt {q} is outside the chain X1..X{T}.")
    left = [v for v in q if v < i]
    right = [v for v in q if v > i]
    if len(left) > 1 or len(right) > 1:
        raise ParameterError("A Lemma 4.6 quilt has at most one node on each side of X_i.")
    if not q:
        return 0.0
    a = i - left[0] if left else 0
    b = right[0] - i if right else 0
    s = ChainQuiltSearch(chain_class, epsilon=1.0, paper_convention=paper_convention)
    s.ensure(max(a, b, 1))
    Gs, Bs, DL, DR = s.node_tables(i, a, b)
    if a and b:
        return float(max(0.0, max(float((G[a - 1] + Bm[b - 1]).max()) for G, Bm in zip(Gs, Bs, strict=True))))
    return float(DL[a - 1]) if a else float(DR[b - 1])
