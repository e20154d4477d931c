"""The README's Python snippets each run alone, as written, and its command synopsis lists every command."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _run_alone(block: str) -> dict:
    """Run one snippet in a fresh namespace (its own imports and definitions only) and return the namespace."""
    namespace: dict = {"__name__": "readme_snippet"}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace


def test_readme_has_the_python_snippets():
    assert len(_python_blocks()) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_each_readme_python_snippet_runs_alone(index):
    namespace = _run_alone(_python_blocks()[index])
    if "theta" in namespace:
        from puffgm.chains import MQMExact

        assert round(MQMExact(namespace["theta"]).calibrate(epsilon=1.0).sigma_max, 4) == 12.9341
    if "top3" in namespace:
        assert len(namespace["top3"].value) == 3
    if "release_laplace" in namespace:
        assert namespace["rel"].secure  # the default noise source is OpenDP's


def test_readme_quickstart_has_exactly_two_commands():
    text = README.read_text()
    block = re.search(r"## Quickstart\n.*?```bash\n(.*?)```", text, flags=re.S).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) == 2
    assert "calibrate example:alarm" in lines[0] and "pytest" in lines[1]


def test_readme_synopsis_lists_every_command_and_query_method():
    from puffgm.cli import COMMANDS
    from puffgm.cli.calibrate import QUERY_METHODS

    text = README.read_text()
    synopsis = re.search(r"## Command line\n+```\n(.*?)```", text, flags=re.S).group(1)
    listed = {ln.split()[1] for ln in synopsis.splitlines() if ln.startswith("puffgm ")}
    assert {name for name, _, _ in COMMANDS} <= listed
    for needed in (*QUERY_METHODS, "--query", "--weights", "--version", "ledger show", "blowfish sensitivity",
                   "blowfish release"):
        assert needed in synopsis, needed
