"""Fixtures shared by the whole suite.

The test tree mirrors the package (tests/networks/, tests/chains/, tests/gaussian/, ...);
helper modules used by several folders (``_nets``, ``gaussian_reference``) sit in tests/ and
are importable everywhere (``pythonpath = ["tests"]`` in pyproject.toml).  Tests that take
more than a few seconds carry the ``slow`` marker: ``python -m pytest -m "not slow"`` is a
quick run, and the README's command runs everything.
"""

from __future__ import annotations

import pytest

from puffgm.networks.priors import load_prior_class


@pytest.fixture
def cli(capsys):
    """Run the ``puffgm`` command in this process: ``cli(*argv) -> (exit code, stdout, stderr)``."""
    from puffgm.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="session")
def asia():
    """The ASIA network bundled with pgmpy, as a one-prior class (read once per session)."""
    return load_prior_class("example:asia")


@pytest.fixture
def honest_but_curious():
    """Hand-made release records accepted by the accountant for one test (the user vouches for them)."""
    from puffgm.core.features import disable_features, enable_features

    enable_features("honest-but-curious")
    yield
    disable_features("honest-but-curious")
