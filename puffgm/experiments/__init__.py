"""Reproductions of the papers' experiments; regenerate them all with ``python -m puffgm.experiments``.

Each experiment is a module defining ``TITLE`` and ``run(out_dir, *, quick, progress)``
(see :mod:`puffgm.experiments.__main__`); the package itself exports nothing.
"""

__all__: list[str] = []
