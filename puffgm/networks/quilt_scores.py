r"""Candidate Markov quilts of a node, their scores, and the node's active quilt.

Song, Wang and Chaudhuri, Algorithm 2 and Definition 4.5: a Markov quilt
:math:`(X_Q, X_N, X_R)` of a protected node :math:`X_i` with :math:`e = e_\Theta(X_Q \mid X_i) < \epsilon`
scores

$$
\sigma(X_Q) = \frac{\mathrm{card}(X_N)}{\epsilon - e},
$$

and the node's *active* quilt is the candidate of smallest score.
:class:`QuiltSearch` builds the candidates of every node of one prior class
(exhaustive on small networks, a structured family bounded by
``max_quilt_states`` on larger ones, see :mod:`puffgm.networks.quilts`), scores
them with one shared :class:`~puffgm.networks.influence.InfluenceEngine`, finds
the active quilt (:meth:`QuiltSearch.best`) and grows it greedily for the nodes
that set :math:`\sigma_{\max}` (:meth:`QuiltSearch.refine`).

Within a node the candidates are scanned by increasing :math:`\mathrm{card}(X_N)` and the scan
stops once :math:`\mathrm{card}(X_N) / \epsilon` cannot beat the best score (a score is never
below :math:`\mathrm{card}(X_N) / \epsilon`), so the pruning never changes the result.
:func:`better` is the tie rule every search of this package shares.
"""

from __future__ import annotations

import math
from itertools import combinations

from puffgm.core.results import QuiltChoice
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import InferenceLimitError, ParameterError
from puffgm.networks.influence import Influence, InfluenceEngine
from puffgm.networks.priors import load_prior_class
from puffgm.networks.quilts import (
    DEFAULT_MAX_QUILT_STATES,
    DSeparationIndex,
    MarkovQuilt,
    distance_layers,
    exhaustive_quilts,
    use_exhaustive,
)
from puffgm.networks.secrets import SecretSpec

__all__ = ["QuiltSearch", "better", "candidate_quilts", "evaluate_quilts"]


#: Absolute slack on computed log-influences when a lower bound is used to skip a
#: quilt (rounding of exact inference is ~1e-14): a quilt is skipped only if its
#: score with influence ``bound - _BOUND_SLACK`` still cannot win.
_BOUND_SLACK = 1e-9

#: Values closer than this (relative for scores, absolute for log-influences) are ties in
#: the structured search; they differ only by floating-point rounding.
_TIE = 1e-9

#: Quilts whose joint table with the node has at least this many entries are first
#: probed with their two and three strongest nodes (a cheap lower bound on e).  On
#: smaller quilts a probe costs about as much as the query it may save.
_PROBE_MIN_ENTRIES = 1 << 14
#: After the two and three strongest nodes, one more probe: the most strongest nodes whose
#: joint table is at most 1/_PROBE_RATIO of the quilt's (a higher floor at a small cost).
_PROBE_RATIO = 16


def _score_floor(n_nearby: int, bound: float, epsilon: float) -> float:
    """A lower bound on the computed score of a quilt whose influence is at least ``bound``."""
    lo = bound - _BOUND_SLACK
    return n_nearby / (epsilon - lo) if lo < epsilon else math.inf


def better(score: float, incumbent: float) -> bool:
    r"""True when ``score`` is strictly better (smaller) than ``incumbent`` beyond rounding.

    Scores equal up to :math:`10^{-12}` (relative) are ties, and a tie keeps the incumbent: in
    :meth:`QuiltSearch.best` the incumbent was met first in the scan by
    (:math:`\operatorname{card}(X_N)`, :math:`\operatorname{card}(X_Q)`), so the active quilt carries no superfluous
    nodes; the
    branch and bound (:mod:`puffgm.networks.quilt_search`) and the cutting-plane
    certificate (:mod:`puffgm.networks.quilt_certify`) keep their incumbent the same way.

    Parameters
    ----------
    score : float
        The score of a new quilt.
    incumbent : float
        The score of the quilt it competes with.

    Returns
    -------
    bool
        ``score < incumbent * (1 - 1e-12)``.
    """
    return score < incumbent * (1 - 1e-12)



class QuiltSearch:
    """Candidate quilts of every node of one prior class, sharing one influence engine.

    Parameters
    ----------
    prior_class : PriorClass
    secrets : SecretSpec, optional
    max_quilt_states : int
        Bound on the joint state space of a candidate quilt (structured family only).
    exhaustive : bool or None
        Force (True) or forbid (False) the exhaustive search; None decides by size
        (:func:`puffgm.networks.quilts.use_exhaustive`).
    max_table_entries : int, optional
        Largest table exact inference may build (default
        :data:`puffgm.networks.inference.DEFAULT_MAX_TABLE_ENTRIES`).  While searching for an
        active quilt, a candidate whose inference would need more is skipped
        (counted in :attr:`skipped`); the trivial quilt needs none.  A node whose search
        needs a single-node influence past the limit gets the trivial quilt (named in
        :attr:`fallback`, see :meth:`best`).
    """

    def __init__(self, prior_class, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES, exhaustive=None,
                 max_table_entries=None):
        self.prior_class = prior_class
        self.secrets = secrets or SecretSpec()
        self.max_quilt_states = check_positive_int(max_quilt_states, "max_quilt_states", "calibrate")
        self.exhaustive = use_exhaustive(prior_class) if exhaustive is None else bool(exhaustive)
        if max_table_entries is not None:
            max_table_entries = check_positive_int(max_table_entries, "max_table_entries", "calibrate")
        self.max_table_entries = max_table_entries
        self.engine = InfluenceEngine(prior_class, self.secrets, max_table_entries)
        self.skipped = 0  # candidates skipped by best/refine because inference exceeded max_table_entries
        self.fallback: set = set()  # nodes given the trivial quilt: a single-node influence exceeded the limit
        self.dag = prior_class.dag
        self._moral = None
        self._moral_bits = None
        self._dsep = DSeparationIndex(self.dag)
        self._order = {n: k for k, n in enumerate(prior_class.nodes)}
        self._card = {n: len(prior_class.states[n]) for n in prior_class.nodes}
        self._quilts = {}  # (node, frozenset quilt) -> MarkovQuilt

    def forget_nodes(self):
        """Drop what is kept per node (influences, quilts, d-separation memos) and keep what
        serves every node (the calibrated junction tree, conditionals, the moral graph).

        Every dropped entry is keyed by the protected node it was computed for, so a search
        that forgets between nodes gives each node the result of a fresh search.
        """
        self._quilts.clear()
        self._dsep.forget()
        self.engine.forget_nodes()

    def _make(self, node, quilt, qbits=None) -> MarkovQuilt:
        """make_quilt(dag, node, quilt), on the compiled DAG and memoised (``qbits``: the quilt's
        bitmask when the caller has it)."""
        key = (node, quilt if isinstance(quilt, frozenset) else frozenset(quilt))
        mq = self._quilts.get(key)
        if mq is None:
            mq = self._dsep.make_quilt(node, key[1], qbits)
            self._quilts[key] = mq
        return mq

    def _single(self, node, j) -> float:
        """e({X_j} | X_i): max-influence is monotone in the quilt (a marginal of a
        conditional law is no more distinguishable), so e(Q) >= max_j in Q of this."""
        return self._influence_or_skip(node, (j,)).value

    def influence_if_fits(self, node, quilt):
        """e(quilt | node) exactly, or None when the quilt has more than ``max_quilt_states`` joint
        states or, for two or more nodes, when exact inference on it would exceed
        ``max_table_entries`` (counted in :attr:`skipped`, as in :meth:`best`).

        The branch and bound, its dive and the cutting-plane certificate read None as "not
        available": they keep the floors they had, so their quilts and bounds stay valid.
        """
        if not self._fits(quilt):
            return None
        infl = self._influence_or_skip(node, quilt)
        return None if infl is None else infl.value

    def _influence_or_skip(self, node, quilt):
        """e(quilt | node) as an Influence, or None (counted in :attr:`skipped`) when exact
        inference on a quilt of two or more nodes would exceed ``max_table_entries``; a
        single-node influence past the limit raises (it drives the search itself; :meth:`best`
        then falls back to the trivial quilt), unless X_j is d-separated from X_i by the empty
        set: then e({X_j} | X_i) = 0 exactly (X_j is independent of X_i), and is cached as such."""
        try:
            return self.engine.max_influence(node, quilt)
        except InferenceLimitError:
            if len(quilt) < 2:
                if not quilt or next(iter(quilt)) not in self._make(node, frozenset()).remote:
                    raise
                zero = Influence(0.0, None)
                self.engine.remember(node, quilt, zero)
                return zero
            self.skipped += 1
            return None

    def influence_floor(self, node, quilt) -> float:
        """A lower bound on e(quilt | node): the largest single-node influence in the quilt."""
        return max((self._single(node, j) for j in quilt), default=0.0)

    @property
    def moral(self):
        """The moral graph of the DAG (``networkx.moral_graph``), built once."""
        if self._moral is None:
            import networkx as nx

            self._moral = nx.moral_graph(self.dag)
        return self._moral

    @property
    def family(self) -> str:
        """The candidate family in words: "exhaustive" or "structured (max_quilt_states=...)"."""
        return "exhaustive" if self.exhaustive else f"structured (max_quilt_states={self.max_quilt_states})"

    def candidates(self, node) -> list:
        """Candidate quilts of ``node``, trivial quilt first, deduplicated."""
        if self.exhaustive:
            if node not in self._dsep.index:
                return list(exhaustive_quilts(self.dag, node))  # raises the QuiltError
            others = [v for v in self.dag.nodes if v != node]
            return [self._make(node, q) for r in range(len(others) + 1) for q in combinations(others, r)]
        return self._structured(node)

    # -------------------------------------------------------------- structured
    def _fits(self, quilt) -> bool:
        """True when the quilt has at most ``max_quilt_states`` joint states (the product of the
        cardinalities, which never decreases, stops once past the bound)."""
        card, limit = self._card, self.max_quilt_states
        states = 1
        for q in quilt:
            states *= card[q]
            if states > limit:
                return False
        return True

    def _structured(self, node) -> list:
        moral = self.moral
        if self._moral_bits is None:
            self._moral_bits = {v: self._dsep.bits(moral.neighbors(v)) for v in moral}
        seen = {}

        def add(q, qbits=None):
            q = frozenset(q)
            if q in seen or (q and not self._fits(q)):
                return
            seen[q] = self._make(node, q, qbits)

        add(())
        for layer in distance_layers(moral, node):
            add(layer)
        # region growing: absorb the boundary node with the largest single-node influence
        single = {}

        def strength(j):
            if j not in single:
                single[j] = self._single(node, j)
            return single[j]

        dsep, mbits = self._dsep, self._moral_bits
        region = dsep.bits([node])
        near = mbits[node]  # moral neighbours of the region (region included after growth)
        while True:
            bb = near & ~region
            if not bb:
                break
            boundary = dsep.names(bb)
            add(boundary, bb)
            minimal = self._minimal(node, boundary, bb)
            if minimal != boundary:
                key = (node, minimal)
                if key not in self._quilts:  # X_R grows by the dropped nodes, X_N is the boundary's
                    mq = self._make(node, boundary, bb)
                    self._quilts[key] = MarkovQuilt(node, minimal, mq.nearby, mq.remote | (boundary - minimal))
                add(minimal)
            # the strongest boundary node; strengths within 1e-9 are ties (they differ by
            # rounding only), broken by name, so the family does not depend on rounding
            ranked = sorted(boundary)
            top = max(strength(j) for j in ranked)
            nxt = next(j for j in ranked if strength(j) >= top - _TIE)
            region |= 1 << dsep.index[nxt]
            near |= mbits[nxt]
        return list(seen.values())

    def _minimal(self, node, quilt, qbits=None) -> frozenset:
        """Drop quilt nodes d-separated from ``node`` by the rest, keeping the remote set.

        The result is the quilt nodes the Bayes ball from ``node`` given the quilt touches,
        so one ball (the one that gave the quilt its remote set) decides every node:

        * an untouched v is d-separated from ``node`` by the rest: an active trail to v
          given the rest would be active, up to v, given the quilt too;
        * dropping an untouched v changes nothing else the ball does: a collider that
          stops being open (an ancestor of v only) would, once entered, lead the ball down
          a directed path of unobserved nodes to v, so it is never entered;
        * a touched v stays: the trail that reaches it is active given the rest, for the
          same reason, so v is d-connected to ``node`` given the rest.

        By the contraction property of d-separation (i _|_ R | Q and i _|_ v | Q - v give
        i _|_ R + v | Q - v) the remote set grows by exactly the dropped nodes and the
        nearby set is the quilt's.  This is the quilt of dropping, one by one, every node
        whose removal keeps the remote set (in any order).
        """
        dsep = self._dsep
        q = dsep.bits(quilt) if qbits is None else qbits
        kept = q & dsep.reach_and_touched(node, q)[1]
        return quilt if kept == q and isinstance(quilt, frozenset) else dsep.names(kept)

    # ----------------------------------------------------------------- scoring
    def choice(self, quilt: MarkovQuilt, *, epsilon=None) -> QuiltChoice:
        r"""The record of one candidate quilt: its max-influence and score (Algorithm 2).

        Parameters
        ----------
        quilt : MarkovQuilt
            A quilt of ``quilt.node`` (from :meth:`candidates` or
            :func:`puffgm.networks.quilts.make_quilt`).
        epsilon : float or None
            The privacy parameter; None leaves the score ``nan`` (influence only).

        Returns
        -------
        QuiltChoice
            ``score`` :math:`= \operatorname{card}(X_N) / (\epsilon - e)`, or inf when :math:`e \ge \epsilon`; quilt,
            nearby and remote sets in node order.
        """
        infl = self.engine.max_influence(quilt.node, quilt.quilt)
        order = self._order.__getitem__
        if epsilon is None:
            score = math.nan
        elif infl.value < epsilon:
            score = len(quilt.nearby) / (epsilon - infl.value)
        else:
            score = math.inf
        return QuiltChoice(
            node=quilt.node,
            quilt=tuple(sorted(quilt.quilt, key=order)),
            nearby=tuple(sorted(quilt.nearby, key=order)),
            remote=tuple(sorted(quilt.remote, key=order)),
            max_influence=infl.value,
            score=score,
            witness=infl.witness,
        )

    def _try_choice(self, quilt: MarkovQuilt, epsilon):
        """:meth:`choice`, or None (counted in :attr:`skipped`) when exact inference on the
        quilt would exceed ``max_table_entries``: leaving a candidate out keeps every
        remaining candidate valid, so the calibration stays valid (never below the optimum
        over the remaining candidates)."""
        if self._influence_or_skip(quilt.node, quilt.quilt) is None:
            return None
        return self.choice(quilt, epsilon=epsilon)  # the influence is cached now

    def refine(self, node, *, epsilon, incumbent: QuiltChoice) -> QuiltChoice:
        r"""Greedy quilt growth from the outside in, for the nodes that set :math:`\sigma_{\max}`.

        Starting from the trivial quilt, repeatedly move into :math:`X_Q` the nearby node
        whose addition gives the smallest score (ties: smaller influence), while
        some addition keeps the influence below :math:`\epsilon` and the quilt within
        ``max_quilt_states``; the best quilt met on the way competes with the
        incumbent (:func:`better`).  The additions of a step are scored in order of a
        floor on their influence, :math:`\max(e(\text{quilt}), e(\{j\}), e(Q' + j))` of a smaller quilt :math:`Q'`
        scored at an earlier step (max-influence is monotone in the quilt), and once a
        floor's score exceeds :math:`(1 + 10^{-9})` times the smallest score of the step the rest are
        skipped: they cannot be chosen, so the growth is that of scoring every addition.

        Parameters
        ----------
        node : str
            The protected node :math:`X_i`.
        epsilon : float
            The privacy parameter the scores are computed at.
        incumbent : QuiltChoice
            The node's best quilt so far (its active quilt from :meth:`best`).

        Returns
        -------
        QuiltChoice
            The better of ``incumbent`` and the best quilt met while growing.

        See Also
        --------
        refine_steps : the same growth, one step at a time.
        """
        best = incumbent
        for step in self.refine_steps(node, epsilon=epsilon, incumbent=incumbent):
            best = step
        return best

    def refine_steps(self, node, *, epsilon, incumbent: QuiltChoice):
        r"""The growth of :meth:`refine`, one step at a time.

        Parameters
        ----------
        node : str
            The protected node :math:`X_i`.
        epsilon : float
            The privacy parameter the scores are computed at.
        incumbent : QuiltChoice
            The node's best quilt so far.

        Yields
        ------
        QuiltChoice
            After every step, the better of ``incumbent`` and the best quilt met so far
            (:func:`better`), so the scores never increase; the last one is :meth:`refine`'s
            result (nothing is yielded when no addition keeps the influence below :math:`\epsilon`).
            A caller may pause the growth between steps and resume it, or drop it: the
            calibration grows the worst node only while it is the worst.
        """
        best = incumbent
        quilt: frozenset[str] = frozenset()
        current = self._make(node, quilt)
        order = self._order.__getitem__
        e_quilt = 0.0  # e(quilt | node): a lower bound for every extension (monotonicity)
        # j -> e(Q' + j | node) scored at an earlier step: Q' is inside the quilt, a floor for j
        grown: dict[str, float] = {}
        while True:
            # each addition's score has a floor from max(e(quilt), e({j}), e(Q' + j) of an
            # earlier step); options are scored in order of that floor, and once a floor
            # exceeds the smallest score found no later option can be the minimum, so the
            # choice is unchanged
            cands = []
            for j in sorted(current.nearby - {node}, key=order):
                q = quilt | {j}
                if not self._fits(q):
                    continue
                mq = self._make(node, q)
                floor = _score_floor(len(mq.nearby), max(e_quilt, self._single(node, j), grown.get(j, 0.0)), epsilon)
                cands.append((floor, order(j), j, mq))
            cands.sort(key=lambda c: c[:2])
            options: list[tuple] = []
            for floor, _, j, mq in cands:
                if floor == math.inf or (options and floor > min(o[0] for o in options) * (1 + 1e-9)):
                    break
                ch = self._try_choice(mq, epsilon)
                if ch is None:
                    continue
                grown[j] = ch.max_influence
                if math.isfinite(ch.score):
                    options.append((ch.score, ch.max_influence, order(j), j, ch))
            if not options:
                return
            # smallest score, then smaller influence, then node order; values within 1e-9
            # (relative for scores, absolute for influences) are ties
            low = min(o[0] for o in options)
            near = [o for o in options if o[0] <= low * (1 + _TIE)]
            low_e = min(o[1] for o in near)
            score, e_quilt, _, j, ch = min((o for o in near if o[1] <= low_e + _TIE), key=lambda o: o[2])
            if better(score, best.score):
                best = ch
            yield best
            quilt = quilt | {j}
            current = self._make(node, quilt)

    def best(self, node, *, epsilon) -> QuiltChoice:
        r"""The active quilt of ``node``: the candidate of smallest score, or the trivial quilt
        when the search needs exact inference past ``max_table_entries``.

        The search (:meth:`search_best`) drives its region growing and its floors by the
        single-node influences :math:`e(\{X_j\} \mid X_i)`; when one of them needs a table of more than
        ``max_table_entries`` entries, the node gets the trivial quilt (:math:`X_Q` empty, :math:`X_R` the
        nodes independent of :math:`X_i`, score :math:`\operatorname{card}(X_N) / \epsilon`; no inference) and is added
        to
        :attr:`fallback`.  The trivial quilt is a Markov quilt of every node (Song et al.,
        Definition 4.2 with :math:`X_Q` empty), so the node's score is valid for Theorem 4.3, and no
        smaller than the optimum over the node's quilts.

        Parameters
        ----------
        node : str
            The protected node :math:`X_i`.
        epsilon : float
            The privacy parameter the scores are computed at.

        Returns
        -------
        QuiltChoice
            The active quilt of ``node`` among :meth:`candidates`, or its trivial quilt.
        """
        try:
            return self.search_best(node, epsilon=epsilon)
        except InferenceLimitError:
            self.fallback.add(node)
            return self.choice(self._make(node, frozenset()), epsilon=epsilon)  # e = 0, no inference

    def search_best(self, node, *, epsilon) -> QuiltChoice:
        r"""The active quilt of ``node``: the candidate of smallest score.

        The result is that of a scan by increasing (:math:`\operatorname{card}(X_N)`, :math:`\operatorname{card}(X_Q)`)
        that keeps the incumbent unless a candidate is strictly better (:func:`better`).  To score few
        quilts, a candidate is skipped when a floor on its score is at least
        :math:`(1 + 10^{-9})` times the smallest score found so far (the trivial quilt's, to start):
        max-influence is monotone in the quilt (a marginal of a conditional law is no
        more distinguishable), so :math:`e(Q)` is at least the largest single-node influence in
        :math:`Q`, at least :math:`e(Q')` of every evaluated candidate :math:`Q' \subseteq Q`, and, for large
        quilts, at least :math:`e` of the :math:`m` strongest nodes of :math:`Q` for :math:`m = 2, 3` and the largest
        :math:`m`
        whose table is small beside the quilt's (:data:`_PROBE_RATIO`) (cheap probes);
        and a score is at least :math:`\operatorname{card}(X_N) / \epsilon`.  Every skipped candidate scores
        above :math:`(1 + 10^{-9})` times the minimum, while only candidates within :math:`10^{-12}` of the minimum
        can be chosen by the scan, so the scan over the evaluated candidates, in the
        original order, picks exactly the quilt the full scan picks.

        Parameters
        ----------
        node : str
            The protected node :math:`X_i`.
        epsilon : float
            The privacy parameter the scores are computed at.

        Returns
        -------
        QuiltChoice
            The active quilt of ``node`` (Definition 4.5) among :meth:`candidates`.

        Raises
        ------
        InferenceLimitError
            When a single-node influence needs a table past ``max_table_entries``.
        """
        cands = sorted(self.candidates(node), key=lambda c: (len(c.nearby), len(c.quilt)))
        known = {k: self.choice(c, epsilon=epsilon) for k, c in enumerate(cands) if not c.quilt}  # no inference
        top = min((ch.score for ch in known.values()), default=math.inf)
        evaluated: list[tuple[frozenset, float]] = []  # (quilt, influence) of the evaluated candidates
        k_node = len(self.prior_class.states[node])
        best = None  # the scan's incumbent, over the candidates evaluated so far
        for k, c in enumerate(cands):
            # skip when the floor reaches the incumbent (c cannot be strictly better) or
            # (1 + 1e-9) * the smallest score found (c cannot be the minimum)
            limit = min(top * (1 + 1e-9), best.score if best is not None else math.inf)
            if len(c.nearby) / epsilon >= limit:
                break  # every later candidate has at least as many nearby nodes
            if c.quilt:
                e = max((v for q, v in evaluated if q <= c.quilt), default=0.0)
                e = max(e, self.influence_floor(node, c.quilt))
                if _score_floor(len(c.nearby), e, epsilon) >= limit:
                    continue
                if len(c.quilt) > 2 and self.engine.quilt_states(c.quilt) * k_node >= _PROBE_MIN_ENTRIES:
                    strongest = sorted(c.quilt, key=lambda j: (-self._single(node, j), self._order[j]))
                    # probes: the 2 and 3 strongest, then the most strongest nodes whose table is
                    # at most 1/_PROBE_RATIO of the quilt's (the highest floor at that cost)
                    full = self.engine.quilt_states(c.quilt)
                    m_max = 3
                    while (m_max + 1 < len(c.quilt)
                           and self.engine.quilt_states(strongest[:m_max + 1]) * _PROBE_RATIO <= full):
                        m_max += 1
                    for m in (2, 3, m_max) if m_max > 3 else (2, 3):
                        if m >= len(c.quilt) or _score_floor(len(c.nearby), e, epsilon) >= limit:
                            break
                        try:
                            e = max(e, self.engine.max_influence(node, strongest[:m]).value)
                        except InferenceLimitError:
                            break
                    if _score_floor(len(c.nearby), e, epsilon) >= limit:
                        continue
                ch = self._try_choice(c, epsilon)
                if ch is None:
                    continue
                known[k] = ch
                evaluated.append((c.quilt, ch.max_influence))
                top = min(top, ch.score)
            ch = known[k]
            if best is None or better(ch.score, best.score):
                best = ch
        best = None
        for k, c in enumerate(cands):  # the scan, over the candidates that can matter
            if best is not None and len(c.nearby) / epsilon >= best.score:
                break
            ch = known.get(k)
            if ch is not None and (best is None or better(ch.score, best.score)):
                best = ch
        assert best is not None  # the trivial quilt is a candidate, in known without inference
        return best


def candidate_quilts(prior, node, *, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES, exhaustive=None):
    """The candidate Markov quilts of ``node`` (see :mod:`puffgm.networks.quilts`).

    Parameters
    ----------
    prior : anything :func:`puffgm.networks.priors.load_prior_class` accepts
    node : str
    secrets, max_quilt_states, exhaustive
        As for :class:`QuiltSearch`.

    Returns
    -------
    list of MarkovQuilt
        Trivial quilt first, deduplicated.
    """
    pc = load_prior_class(prior)
    if node not in pc.states:
        raise ParameterError(f"{node!r} is not a node of the prior.")
    return QuiltSearch(pc, secrets, max_quilt_states, exhaustive).candidates(node)


def evaluate_quilts(prior, node, *, epsilon=None, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES,
                    exhaustive=None, search: QuiltSearch | None = None) -> list:
    """Every candidate quilt of ``node`` with its max-influence (and score when ``epsilon`` is given).

    Parameters
    ----------
    prior : anything :func:`puffgm.networks.priors.load_prior_class` accepts
        Ignored when ``search`` is given.
    node : str
    epsilon : float or None
        The privacy parameter of the scores (None: influences only).
    secrets, max_quilt_states, exhaustive
        As for :class:`QuiltSearch` (ignored when ``search`` is given).
    search : QuiltSearch, optional
        A search to reuse (its influence cache serves several nodes).

    Returns
    -------
    list of QuiltChoice
        ``score`` is ``nan`` when ``epsilon`` is None.
    """
    if epsilon is not None:
        epsilon = check_positive_finite(epsilon, "epsilon", "evaluate_quilts")
    if search is None:
        pc = load_prior_class(prior)
        search = QuiltSearch(pc, secrets, max_quilt_states, exhaustive)
    if node not in search.prior_class.states:
        raise ParameterError(f"{node!r} is not a node of the prior.")
    return [search.choice(c, epsilon=epsilon) for c in search.candidates(node)]
