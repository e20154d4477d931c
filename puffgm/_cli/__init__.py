"""Subcommands of the ``puffgm`` CLI: each module has ``register(parser)`` and ``run(args) -> str``.

Modules here must not import pgmpy at import time (keep ``puffgm --help`` fast).
"""
