r"""The outer loop of the Markov Quilt Mechanism, written once for every prior kind.

Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data"
(SIGMOD 2017, arXiv:1603.03977), Algorithm 2 and Theorem 4.3: for a finite class
:math:`\Theta` and protected nodes :math:`X_i`,

$$
\sigma_i^\theta = \min_Q \frac{\mathrm{card}(X_N)}{\epsilon - e_\theta(X_Q \mid X_i)}, \qquad
\sigma_{\max} = \max_{\theta \in \Theta} \max_i \sigma_i^\theta ,
$$

each :math:`\theta` with its own active quilts (the proof fixes :math:`\theta` first).  What
every prior kind shares is here:

* :func:`run_mqm`: every prior of the class, every protected node's best quilt under it
  (the kind's ``search_prior``), the node's worst prior (ties keep the earlier prior),
  the worst node with the canonical tie-break of :mod:`puffgm.core.ties` (first in
  node order among the scores that tie with the largest), :math:`\sigma_{\max}` (the
  largest score, never below any node's), the group-DP baseline
  :math:`\sigma_{\text{group}} = (\text{largest group}) / \epsilon` and the witness
  of each quilt, stamped with its prior's index;
* :func:`search_nodes`: the per-node loop of one prior with its progress bar and time checks;
* :func:`best_quilt`: the minimum of the score over a kind's candidate quilts;
* :class:`MQMClock`: the one time budget of a calibration.

A prior kind supplies only how it searches one node (enumerates candidate quilts and
bounds their influence): Bayesian networks (:mod:`puffgm.networks.calibration`),
Markov chains (:mod:`puffgm.chains.exact`, :mod:`puffgm.chains.approx`) and
linear-Gaussian networks (:mod:`puffgm.gaussian.networks`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from puffgm.core.results import CalibrationResult, QuiltChoice
from puffgm.core.ties import canonical_argmax
from puffgm.core.validation import check_time_limit
from puffgm.exceptions import ParameterError, TimeLimitError

__all__ = [
    "MQMClock", "MQMOutcome", "run_mqm", "search_nodes", "best_quilt", "worst_index", "group_dp_sigma",
    "format_seconds", "NO_GAIN_RTOL",
]

#: A projection of the time this many times over the limit refuses at once (once it is informed).
_CLEAR_EXCESS = 4.0
_HOW = "(--time-limit SECONDS; 0: no limit)"
#: sigma_max counts as no gain over group DP when it is within this relative distance of it.
NO_GAIN_RTOL = 1e-12


def format_seconds(s: float) -> str:
    """Seconds for a message: ``'12'``, ``'3.2e+05'``; ``'inf'`` stays ``'inf'``."""
    if not math.isfinite(s):
        return "inf"
    return f"{s:.0f}" if s < 1e5 else f"{s:.2g}"


@dataclass(frozen=True)
class _FirstRound:
    """When the first node search of every worker had ended: ``seconds`` after the start, ``done`` searches."""

    seconds: float
    done: int


class MQMClock:
    r"""The time budget of one calibration: a deadline and projections of the work left.

    Two projections, one budget:

    * :meth:`check` (inside any loop): refuse past the deadline, or early when the work
      projected from ``done`` of ``total`` units is over :data:`_CLEAR_EXCESS` times the
      limit once min(1 s, limit / 10) has passed; :meth:`project` refuses before the work
      starts;
    * :meth:`tick` (after each of ``total`` node searches): the projection leaves out the
      fixed cost paid before the first node search of every worker ends (the junction tree,
      the workers' start): projected = t_1 + (elapsed - t_1) / (done - n_1) * (total - n_1),
      with n_1 >= jobs searches ended at t_1.  Once min(5 s, limit / 10) have passed and a
      search ended after t_1, a projection above :data:`_CLEAR_EXCESS` times the limit refuses
      at once; one above the limit refuses once a quarter of the limit has passed.

    Parameters
    ----------
    time_limit : float or None
        Seconds (None or 0: no limit).
    what : str
        The computation, the subject of the refusal sentence.
    advice : str
        What to change, before the ``--time-limit`` hint.
    deadline : float, optional
        A ``time.monotonic()`` deadline given instead of ``time_limit``.
    total : int
        The node searches :meth:`tick` counts towards.
    jobs : int
        The workers: the first search of each pays the fixed cost.
    """

    def __init__(self, time_limit=None, what: str = "The computation", advice: str = "use a shorter chain", *,
                 deadline: float | None = None, total: int = 0, jobs: int = 1):
        self.start = time.monotonic()
        if deadline is not None:
            self.limit: float | None = max(deadline - self.start, 0.0)
        else:
            self.limit = check_time_limit(time_limit, "the calibration")
        self.deadline = None if self.limit is None else self.start + self.limit
        self.what, self.advice = what, advice
        self.total = total
        self.done = 0
        self.jobs = max(1, jobs)
        self.first: _FirstRound | None = None  # when the first node search of every worker ended

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def wall_deadline(self) -> float | None:
        """The deadline as a ``time.time()`` instant (worker processes share the wall clock), or None."""
        return None if self.limit is None else time.time() + self.limit - self.elapsed

    def refuse(self, projected: float, detail: str = "") -> None:
        """Raise the TimeLimitError of a projected total of ``projected`` seconds."""
        elapsed = self.elapsed
        how_long = "about " + format_seconds(projected) if math.isfinite(projected) and projected > elapsed else \
            "more than " + format_seconds(elapsed)
        raise TimeLimitError(
            f"{self.what} would take {how_long} s{detail}, over the time limit of {self.limit:.3g} s; "
            f"{self.advice} {_HOW}.")

    def project(self, seconds: float, detail: str = "") -> None:
        """Refuse before the work starts when ``seconds`` (a projection from the counts) is over the limit."""
        if self.limit is not None and seconds > self.limit:
            self.refuse(seconds, detail)

    def check(self, done: float | None = None, total: float | None = None, detail: str = "") -> None:
        """Inside a loop: refuse past the deadline, or early when the work projected from ``done`` of ``total``
        units is clearly over the limit (after min(1 s, limit / 10) has passed)."""
        if self.limit is None:
            return
        elapsed = self.elapsed
        known = bool(done and total)
        projected = elapsed / done * total if known else math.inf  # type: ignore[operator]
        if elapsed > self.limit:
            self.refuse(projected, detail)
        if known and projected > _CLEAR_EXCESS * self.limit and elapsed > min(1.0, self.limit / 10):
            self.refuse(projected, detail)

    def check_nodes(self) -> None:
        """Called inside one node's search (an influence engine's deadline check): stop at the limit."""
        if self.limit is not None and self.elapsed > self.limit:
            self.tick(0)

    def projected(self, elapsed: float) -> float:
        """Projected total seconds of the node searches (inf before the first one ended)."""
        if not self.done:
            return math.inf
        if self.first is None or self.done <= self.first.done or elapsed <= self.first.seconds:
            return elapsed / self.done * self.total
        t1, n1 = self.first.seconds, self.first.done
        return t1 + (elapsed - t1) / (self.done - n1) * (self.total - n1)

    def tick(self, n_done: int = 1) -> None:
        """Count ``n_done`` node searches ended and refuse when the projected total is over the limit."""
        self.done += n_done
        if self.limit is None:
            return
        elapsed = self.elapsed
        if self.first is None and self.done >= min(self.jobs, self.total):
            self.first = _FirstRound(elapsed, self.done)
        projected = self.projected(elapsed)
        if self.done >= self.total and elapsed > self.limit:  # the refinement of the worst nodes
            raise TimeLimitError(
                f"{self.what} did not finish within time_limit={self.limit:g} s "
                f"(all {self.total} node searches done, the refinement of the worst nodes still running "
                f"after {elapsed:.0f} s); {self.advice} {_HOW}.")
        informed = self.first is not None and self.done > self.first.done and elapsed > min(5.0, self.limit / 10)
        early = informed and projected > _CLEAR_EXCESS * self.limit
        if elapsed > self.limit or early or (elapsed > self.limit / 4 and projected > self.limit):
            how_long = ("about " + format(projected, ".0f") if math.isfinite(projected)
                        else "more than " + format(elapsed, ".0f"))
            raise TimeLimitError(
                f"{self.what} would take {how_long} s "
                f"({self.done} of {self.total} node searches done in {elapsed:.0f} s), more than "
                f"time_limit={self.limit:g} s; {self.advice} {_HOW}.")


def search_nodes(nodes: Iterable, best_of: Callable[[Any], Any], *, bar=None,
                 tick: Callable[[int], None] | None = None) -> dict:
    """``{node: best_of(node)}`` in node order: the per-node loop of one prior.

    ``bar`` (a tqdm bar) advances by one per node; ``tick(count)`` is called after each
    node with the number of nodes searched so far (the time budget's check).
    """
    best = {}
    for count, n in enumerate(nodes, 1):
        best[n] = best_of(n)
        if bar is not None:
            bar.update(1)
        if tick is not None:
            tick(count)
    return best


def best_quilt(candidates: Iterable, influence: Callable, choice: Callable, *, epsilon: float) -> Any:
    r"""The candidate quilt of least score :math:`\mathrm{card}(X_N) / (\epsilon - e)` (Algorithm 2's inner min).

    Parameters
    ----------
    candidates : iterable of (quilt, nearby, remote)
        In canonical order: fewest nearby nodes first (the trivial quilt is a candidate).
        The scan stops once :math:`\mathrm{card}(X_N) / \epsilon`, a lower bound on every
        later score, reaches the best score.
    influence : callable
        ``influence(quilt, nearby)``, the max-influence :math:`e(X_Q \mid X_i)`.
    choice : callable
        ``choice(quilt, nearby, remote, e, score)``: the record of a candidate.
    epsilon : float

    Returns
    -------
    object
        The record (``choice``) of the first candidate whose score is below every earlier
        one by a relative 1e-12.
    """
    best = None
    for q, nb, rm in candidates:
        if best is not None and len(nb) / epsilon >= best.score:
            break
        e = influence(q, nb)
        score = len(nb) / (epsilon - e) if e < epsilon else math.inf
        if best is None or score < best.score * (1 - 1e-12):
            best = choice(q, nb, rm, e, score)
    if best is None:
        raise ParameterError("best_quilt needs at least one candidate quilt (the trivial quilt is one).")
    return best


def worst_index(scores: Sequence[float]) -> int:
    """The position of the worst node: the first whose score ties with the largest (:mod:`puffgm.core.ties`).

    Nodes whose scores are equal in exact arithmetic (a deterministic copy of a node has
    its quilts and influences; the middle nodes of a stationary chain) differ only by
    rounding; the tolerance makes the choice independent of the order of floating-point
    operations.
    """
    return canonical_argmax(scores)


def no_gain_over(sigma_max: float, groupdp_sigma: float) -> bool:
    """True when ``sigma_max`` is not below the group-DP baseline, to a relative :data:`NO_GAIN_RTOL`."""
    return sigma_max >= groupdp_sigma * (1 - NO_GAIN_RTOL)


def group_dp_sigma(largest_group: int, *, epsilon: float) -> float:
    r"""The group-DP baseline :math:`(\text{size of the largest group}) / \epsilon` (a connected component, a chain)."""
    return largest_group / epsilon


def stamp_prior(choice: QuiltChoice, prior_index: int) -> QuiltChoice:
    """The quilt with its witness naming the prior's index in its class (prior 0, or no witness: unchanged)."""
    w = choice.witness
    if w is None or not prior_index:
        return choice
    return replace(choice, witness=replace(w, prior=prior_index))


@dataclass(frozen=True)
class MQMOutcome:
    """What :func:`run_mqm` found: every protected node's active quilt, the worst node, the baseline.

    Attributes
    ----------
    best : mapping node -> QuiltChoice
        Each node's quilt under its worst prior (ties keep the earlier prior), in node order.
    prior_of : mapping node -> int
        That prior's index.
    worst : QuiltChoice
        The worst node's quilt (first in node order among the scores that tie with the largest).
    sigma_max : float
        The largest score (never below any node's).
    per_prior : tuple of float
        Each prior's largest score.
    groupdp_sigma : float
        The group-DP baseline.
    """

    best: Mapping
    prior_of: Mapping
    worst: QuiltChoice
    sigma_max: float
    per_prior: tuple
    groupdp_sigma: float

    @property
    def per_node(self) -> tuple:
        """The active quilts in node order."""
        return tuple(self.best.values())

    @property
    def worst_prior(self) -> int:
        """The index of the prior whose quilt the worst node reports."""
        return self.prior_of[self.worst.node]

    @property
    def no_gain(self) -> bool:
        """True when sigma_max is not below the group-DP baseline (:func:`no_gain_over`)."""
        return no_gain_over(self.sigma_max, self.groupdp_sigma)

    def result(self, *, lipschitz: float, epsilon: float, **fields) -> CalibrationResult:
        """The CalibrationResult of this outcome; ``fields`` are the kind's (method, notes, details, ...)."""
        fields.setdefault("per_node", self.per_node)
        return CalibrationResult(epsilon=epsilon, lipschitz=lipschitz, sigma_max=self.sigma_max, worst=self.worst,
                                 groupdp_sigma=self.groupdp_sigma, **fields)


def run_mqm(priors: Sequence, nodes: Sequence | None, search_prior: Callable[[int, Any], Mapping], *,
            epsilon: float, largest_group: int,
            node_key: Callable[[Any], Any] | None = None, bar=None) -> MQMOutcome:
    r"""The Markov Quilt Mechanism's outer loop (Song et al., Algorithm 2) over a finite class.

    Parameters
    ----------
    priors : sequence
        The members :math:`\theta` of the class.
    nodes : sequence or None
        The protected nodes in node order; None when a kind reports only the nodes it
        searched (a chain's shortcuts), ordered by ``node_key``.
    search_prior : callable
        ``search_prior(index, prior)``: ``{node: QuiltChoice}``, the active quilt of every
        node searched under that prior (the kind's quilt search).
    epsilon : float
    largest_group : int
        The size of the largest group of the group-DP baseline.
    node_key : callable, optional
        The order of the nodes when ``nodes`` is None.
    bar : tqdm bar, optional
        Closed at the end, or when a search raises.

    Returns
    -------
    MQMOutcome
        Every node's active quilt under its worst prior, the worst node, sigma_max, each
        prior's largest score and the group-DP baseline.
    """
    best: dict = {}
    prior_of: dict = {}
    per_prior = []
    try:
        for t, theta in enumerate(priors):
            mine = {n: stamp_prior(c, t) for n, c in search_prior(t, theta).items()}
            per_prior.append(max(c.score for c in mine.values()))
            for n, c in mine.items():
                if n not in best or c.score > best[n].score:  # ties keep the earlier prior
                    best[n], prior_of[n] = c, t
    finally:
        if bar is not None:
            bar.close()
    order = [n for n in nodes if n in best] if nodes is not None else sorted(best, key=node_key)
    best = {n: best[n] for n in order}
    worst = best[order[worst_index([best[n].score for n in order])]]
    sigma_max = max(c.score for c in best.values())
    return MQMOutcome(best=best, prior_of=prior_of, worst=worst, sigma_max=sigma_max, per_prior=tuple(per_prior),
                      groupdp_sigma=group_dp_sigma(largest_group, epsilon=epsilon))
