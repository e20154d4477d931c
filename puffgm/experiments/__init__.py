"""Reproductions of the papers' experiments; regenerate them all with ``python -m puffgm.experiments``."""
