r"""The general Pufferfish framework: instantiations, exact audits and general mechanisms.

* :mod:`puffgm.framework.instantiation` -- :math:`(S, Q, \Theta)` over small discrete databases.
* :mod:`puffgm.framework.audit` -- exact worst-case Pufferfish loss of mechanisms.

Further modules (imported on demand): :mod:`~puffgm.framework.wasserstein`,
:mod:`~puffgm.framework.adversaries`, :mod:`~puffgm.framework.cautionary`,
:mod:`~puffgm.framework.continuous`, :mod:`~puffgm.framework.composition_conditions`,
:mod:`~puffgm.framework.paper_numbers`.
"""

from puffgm.framework.audit import (
    AuditResult,
    FiniteMechanism,
    audit_composition,
    audit_exponential,
    audit_finite,
    audit_laplace,
    audit_vector_laplace,
)
from puffgm.framework.instantiation import MAX_DATABASE_STATES, Instantiation, Secret, joint_log_table_from_pgmpy

__all__ = [
    "AuditResult",
    "FiniteMechanism",
    "Instantiation",
    "MAX_DATABASE_STATES",
    "Secret",
    "audit_composition",
    "audit_exponential",
    "audit_finite",
    "audit_laplace",
    "audit_vector_laplace",
    "joint_log_table_from_pgmpy",
]
