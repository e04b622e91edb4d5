"""Every package's public API (`__init__`'s table): each name resolves from the module the
table names, and importing a package imports no JAX until a name that needs it is used."""

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["podracer.envs", "podracer.search", "podracer.agents", "podracer.runs",
            "podracer.anakin", "podracer.sebulba"]  # fmt: skip


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_from_its_module(package):
    module = importlib.import_module(package)
    names = [n for module_names in module._NAMES.values() for n in module_names]
    assert sorted(module.__all__) == sorted(names) and len(set(names)) == len(names)
    for submodule, module_names in module._NAMES.items():
        for name in module_names:
            defined = importlib.import_module(f"{package}.{submodule}")
            assert getattr(module, name) is getattr(defined, name), f"{package}.{name}"


def test_importing_every_package_imports_no_jax():
    code = (
        "import sys\n"
        + "".join(f"import {p}\n" for p in PACKAGES)
        + "from podracer.anakin import AnakinConfig\nfrom podracer.sebulba import SebulbaConfig\n"
        + "AnakinConfig(); SebulbaConfig()\n"
        + "print(sorted(m for m in ('jax', 'flax', 'optax', 'orbax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
