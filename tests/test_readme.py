"""The README's Python snippets run as written, in order, in one namespace."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_python_snippets_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 4
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert round(namespace["theta"] and __import__("puffgm").chains.MQMExact(namespace["theta"])
                 .calibrate(epsilon=1.0).sigma_max, 4) == 12.9341
    assert len(namespace["top3"].value) == 3
    assert namespace["rel"].secure  # the default noise source is OpenDP's


def test_readme_quickstart_has_exactly_two_commands():
    text = README.read_text()
    block = re.search(r"## Quickstart\n.*?```bash\n(.*?)```", text, flags=re.S).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) == 2
    assert "calibrate example:alarm" in lines[0] and "pytest" in lines[1]
