"""Markov-chain priors and the fast Markov Quilt Mechanisms for chains.

Song, Wang and Chaudhuri, section 4.4 and appendix C.2-C.4:

* :mod:`.priors` -- chain priors (q, P, T), families, fitting, pgmpy conversion; the base type of infinite classes;
* :mod:`.exact` -- MQMExact (Algorithm 3, equation (5), Lemma 4.6);
* :mod:`.approx` -- MQMApprox (Algorithm 4, Lemmas 4.8, 4.9, C.4, C.9);
* :mod:`.baselines` -- GroupDP, plain DP, GK16;
* :mod:`.curve` -- the a(b) influence curve of a chain class;
* :mod:`.box` -- infinite classes: a box of binary chains with certified suprema;
* :mod:`.spec` -- the JSON chain spec of the CLI;
* :mod:`.leakage` -- temporal privacy leakage of per-step DP releases (Cao et al., ICDE 2017);
* :mod:`.kind` -- chain classes and boxes as prior kinds (:mod:`puffgm.core.prior`);
  parameter grids are calibrated in parallel by :func:`puffgm.calibrate_many`.

pgmpy is imported lazily (only ``to_pgmpy``/``from_pgmpy`` need it).
"""

from puffgm.chains.approx import MQMApprox, mqm_approx  # noqa: F401
from puffgm.chains.baselines import gk16, group_dp, plain_dp  # noqa: F401
from puffgm.chains.box import ChainParameterBox  # noqa: F401
from puffgm.chains.exact import MQMExact, mqm_exact  # noqa: F401
from puffgm.chains.leakage import allocate_budget, leakage_function, leakage_supremum, temporal_leakage  # noqa: F401
from puffgm.chains.priors import (  # noqa: F401
    ChainPrior,
    ChainPriorClass,
    InfiniteChainClass,
    smooth_transition,
    stationary_distribution,
)
from puffgm.chains.spec import chain_class_from_spec, load_chain_spec  # noqa: F401

__all__ = [
    "ChainPrior", "ChainPriorClass", "InfiniteChainClass", "stationary_distribution", "smooth_transition",
    "MQMExact", "mqm_exact", "MQMApprox", "mqm_approx",
    "group_dp", "plain_dp", "gk16", "load_chain_spec", "chain_class_from_spec",
    "ChainParameterBox", "temporal_leakage", "leakage_supremum", "allocate_budget", "leakage_function",
]

