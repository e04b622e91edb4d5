"""What podracer-runs declares it depends on is what its code imports."""

import re
import tomllib
from pathlib import Path

import pytest

import podracer.runs

SOURCE = Path(podracer.runs.__file__).parent
PYPROJECT = SOURCE.parents[2] / "pyproject.toml"  # packages/runs/ in a checkout

# Import names that are not the distribution's name with "-" as "_".
MODULES = {"lazy-loader": "lazy_loader", "orbax-checkpoint": "orbax",
           "tensorboardx": "tensorboardX", "podracer-agents": "podracer.agents",
           "podracer-envs": "podracer.envs"}  # fmt: skip
# Declared for what another dependency does with it when installed.
USED_WITHOUT_IMPORT = {"crc32c": "tensorboardX checksums events with it"}


@pytest.mark.skipif(not PYPROJECT.exists(), reason="needs the source checkout")
def test_each_declared_dependency_is_imported_by_the_code():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    names = [re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower() for d in declared]
    code = "\n".join(p.read_text() for p in SOURCE.rglob("*.py"))

    def imported(name: str) -> bool:
        module = re.escape(MODULES.get(name, name.replace("-", "_")))
        return re.search(rf"^\s*(import|from) {module}\b", code, re.M) is not None

    unused = [n for n in names if n not in USED_WITHOUT_IMPORT and not imported(n)]
    assert not unused, f"declared in {PYPROJECT} but never imported: {unused}"
