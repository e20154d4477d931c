r"""Close adversaries: what a Pufferfish guarantee says about a prior outside :math:`\Theta`.

Song, Wang and Chaudhuri (SIGMOD 2017), Theorem 2.4: if :math:`M` is :math:`\epsilon`-Pufferfish
private for :math:`(S, Q, \Theta)` and an adversary holds a belief :math:`\tilde\theta \notin \Theta`, then
for every pair and output

$$
e^{-\epsilon - 2\Delta} \le \frac{P(M(X) = w \mid s_i, \tilde\theta)}{P(M(X) = w \mid s_j, \tilde\theta)} \le
  e^{\epsilon + 2\Delta},
$$

$$
\Delta = \inf_{\theta \in \Theta} \max_{s \in S} \max\left( D_\infty(\tilde\theta_{|s} \,\|\, \theta_{|s}),
  \ D_\infty(\theta_{|s} \,\|\, \tilde\theta_{|s}) \right),
$$

where :math:`D_\infty(p \,\|\, q) = \sup_{x \in \operatorname{supp} p} \log p(x) / q(x)` is the max-divergence and
:math:`\theta_{|s}` is the prior conditioned on the secret :math:`s`.  The conditioning matters:
the section's example has an unconditioned divergence of :math:`\log 90` but a
conditioned one of :math:`\log(1728/19) = \log 90.947\ldots` (the paper prints :math:`\log 91.0962`,
obtained from conditionals rounded to four digits; see :func:`section_2_3_example`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from puffgm.core.validation import check_nonnegative_finite
from puffgm.exceptions import ParameterError
from puffgm.framework.instantiation import Instantiation

__all__ = ["max_divergence", "CloseAdversary", "close_adversary", "section_2_3_example"]


def max_divergence(log_p, log_q) -> float:
    r""":math:`D_\infty(p \| q) = \max_{x \,:\, p(x) > 0} \log p(x) - \log q(x)`, from log-probabilities.

    Returns ``inf`` when :math:`q(x) = 0 < p(x)` for some :math:`x`.

    Examples
    --------
    The example of Song et al. section 2.3:

    >>> import numpy as np
    >>> round(max_divergence(np.log([1/3, 1/2, 1/6]), np.log([1/2, 1/4, 1/4])) - float(np.log(2)), 12)
    0.0
    """
    lp, lq = np.asarray(log_p, dtype=float).ravel(), np.asarray(log_q, dtype=float).ravel()
    if lp.shape != lq.shape:
        raise ParameterError("The two laws of max_divergence must have the same support size.")
    supp = lp > -np.inf
    if not supp.any():
        raise ParameterError("The first law of max_divergence has empty support.")
    with np.errstate(invalid="ignore"):
        d = lp[supp] - lq[supp]
    return float(np.max(d))


@dataclass(frozen=True)
class CloseAdversary:
    r""":math:`\Delta` of Theorem 2.4 and the degraded guarantee :math:`\epsilon + 2\Delta`.

    Attributes
    ----------
    delta : float
        Inf over :math:`\Theta` of the max over secrets of the two max-divergences of the conditionals.
    theta : int
        The prior of :math:`\Theta` attaining the infimum.
    secret : str or None
        The secret attaining the max for that prior (None when every secret was skipped).
    per_prior : tuple of float
        Max over secrets for each prior of :math:`\Theta`.
    epsilon : float or None
        The guarantee under :math:`\Theta` (if given).
    skipped : tuple of str
        Secrets with probability zero under :math:`\tilde\theta` or a prior (not conditioned on).
    """

    delta: float
    theta: int
    secret: str | None
    per_prior: tuple
    epsilon: float | None = None
    skipped: tuple = ()

    @property
    def degraded_epsilon(self) -> float:
        r""":math:`\epsilon + 2\Delta` (Theorem 2.4); ``nan`` when :math:`\epsilon` is unknown."""
        return math.nan if self.epsilon is None else self.epsilon + 2 * self.delta

    def to_dict(self) -> dict:
        f = lambda x: x if math.isfinite(x) else None  # noqa: E731
        return {"delta": f(self.delta), "exp_delta": f(math.exp(self.delta)) if self.delta < 700 else None,
                "theta": self.theta, "secret": self.secret, "per_prior": [f(v) for v in self.per_prior],
                "epsilon": self.epsilon,
                "degraded_epsilon": None if self.epsilon is None else f(self.degraded_epsilon),
                "skipped": list(self.skipped)}


def close_adversary(inst: Instantiation, theta_tilde, *, epsilon: float | None = None, secrets=None,
                    log_table: bool = False) -> CloseAdversary:
    r""":math:`\Delta` of Theorem 2.4 for an adversary belief ``theta_tilde`` outside ``inst``'s :math:`\Theta`.

    Parameters
    ----------
    inst : Instantiation
        Supplies :math:`\Theta`, the node layout and the secrets (those of :math:`Q` by default).
    theta_tilde : array, pgmpy network or NetworkPrior
        The adversary's prior on the same nodes and states.
    epsilon : float, optional
        The mechanism's guarantee under :math:`\Theta`, to report :math:`\epsilon + 2\Delta`.
    secrets : sequence of str, optional
        Names of the secrets of Q to condition on (default: every secret of Q).
    log_table : bool
        ``theta_tilde`` is a log-probability table.

    Returns
    -------
    CloseAdversary
        A secret of probability zero under :math:`\tilde\theta` or under a prior of :math:`\Theta` is not
        conditioned on (the Pufferfish technical condition) and is listed in ``skipped``.
    """
    if epsilon is not None:
        epsilon = check_nonnegative_finite(epsilon, "epsilon", "close_adversary")
    pairs = [(a, b) for a, b in inst.pairs]
    tilde = Instantiation([theta_tilde], pairs, nodes=inst.nodes, states=inst.states, log_tables=log_table)
    lt = tilde.log_priors[0].ravel()
    names = []
    for a, b in pairs:
        for s in (a.name, b.name):
            if s not in names:
                names.append(s)
    if secrets is not None:
        unknown = [s for s in secrets if s not in names]
        if unknown:
            raise ParameterError(f"Unknown secret(s) {unknown!r}; the secrets of Q are {names!r}.")
        names = list(secrets)
    per_prior, arg = [], []
    skipped = set()
    for t, lp in enumerate(inst.log_priors):
        lp = lp.ravel()
        worst, worst_s = 0.0, None
        for s in names:
            m = inst.mask(s).ravel()
            ps, pt = inst.log_prob_secret(t, s), tilde.log_prob_secret(0, s)
            if pt == -np.inf:  # the adversary rules s out: Theorem 2.4 says nothing about it
                skipped.add(s)
                continue
            if ps == -np.inf:
                # theta cannot produce s but the adversary can: theta's guarantee covers no pair
                # involving s, so theta cannot vouch for this adversary (infinite divergence)
                d = np.inf
            else:
                cp, ct = lp[m] - ps, lt[m] - pt
                d = max(max_divergence(ct, cp), max_divergence(cp, ct))
            if worst_s is None or d > worst:
                worst, worst_s = d, s
        per_prior.append(worst)
        arg.append(worst_s)
    k = int(np.argmin(per_prior))
    return CloseAdversary(delta=float(per_prior[k]), theta=k, secret=arg[k], per_prior=tuple(per_prior),
                          epsilon=epsilon, skipped=tuple(sorted(skipped)))


def section_2_3_example() -> dict:
    r"""The numbers of Song et al. section 2.3 (after Theorem 2.4), computed exactly.

    :math:`\theta = (0.9, 0.05, 0.05)` and :math:`\tilde\theta = (0.01, 0.95, 0.04)` on databases
    :math:`D_1, D_2, D_3`; the secret :math:`s` rules out :math:`D_3`.

    Returns
    -------
    dict
        ``unconditioned`` = :math:`\max(D_\infty(\theta \| \tilde\theta), D_\infty(\tilde\theta \| \theta)) = \log 90`;
        ``conditioned`` = the same for :math:`\theta | s`, :math:`\tilde\theta | s`:
        :math:`\log(90 \cdot 0.96 / 0.95) = \log(1728/19)`;
        ``paper_conditioned`` = :math:`\log 91.0962`, the paper's value, reproduced from the
        conditionals rounded to four digits (0.9474 / 0.0104): a rounding slip.
    """
    th = np.array([0.9, 0.05, 0.05])
    tt = np.array([0.01, 0.95, 0.04])
    unc = max(max_divergence(np.log(th), np.log(tt)), max_divergence(np.log(tt), np.log(th)))
    cth, ctt = th[:2] / th[:2].sum(), tt[:2] / tt[:2].sum()
    con = max(max_divergence(np.log(cth), np.log(ctt)), max_divergence(np.log(ctt), np.log(cth)))
    rth, rtt = np.round(cth, 4), np.round(ctt, 4)
    paper = max(max_divergence(np.log(rth), np.log(rtt)), max_divergence(np.log(rtt), np.log(rth)))
    # the same through the general routine: one node D with three states, secret s = "D in {D1, D2}"
    from puffgm.framework.instantiation import Secret

    inst = Instantiation([th], [(Secret.in_set("D", ["D1", "D2"], name="s"), Secret.value("D", "D3"))],
                         nodes=["D"], states={"D": ("D1", "D2", "D3")})
    general = close_adversary(inst, tt, secrets=["s"])
    return {
        "unconditioned": unc, "exp_unconditioned": math.exp(unc),
        "conditioned": con, "exp_conditioned": math.exp(con),
        "conditioned_exact_ratio": "1728/19",
        "paper_conditioned": paper, "exp_paper_conditioned": math.exp(paper),
        "conditionals": {"theta|s": cth.tolist(), "theta~|s": ctt.tolist()},
        "close_adversary_delta": general.delta,
    }
