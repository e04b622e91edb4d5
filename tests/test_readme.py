"""The README's Python code blocks (From Python, Your own ...) run as they are written."""

import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).parent.parent / "README.md"


def blocks(section: str) -> list[str]:
    text = README.read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.S)


@pytest.mark.parametrize("section", ["From Python", "Your own environment", "Your own agent"])
def test_a_readme_section_s_code_runs(section):
    code = "\n".join(blocks(section))  # a section's blocks continue one another
    # A fresh interpreter, as a reader's: nothing registered beforehand.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
