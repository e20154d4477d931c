"""Explicit privacy accounting: the accountant (:mod:`puffgm.accounting.accountant`) composes releases by
the theorem each declares, and keeps its entries in a ledger (:mod:`puffgm.accounting.ledger`): in memory,
or in a SQLite file that outlives the process and is shared safely by concurrent processes."""

from puffgm.accounting.accountant import (
    THEOREM_7,
    THEOREM_BLOWFISH,
    THEOREM_MQM,
    AccountingReport,
    PrivacyAccountant,
)
from puffgm.accounting.ledger import LedgerEntry

__all__ = ["PrivacyAccountant", "LedgerEntry", "AccountingReport", "THEOREM_MQM", "THEOREM_7", "THEOREM_BLOWFISH"]
