"""The public API (`podracer.envs.__init__`): lazy, complete, and importable without JAX."""

import ast
import pathlib
import subprocess
import sys

import pytest

import podracer.envs as envs


def test_every_public_name_resolves_from_its_module():
    stub = ast.parse((pathlib.Path(envs.__file__).parent / "__init__.pyi").read_text())
    pairs = [(n.module, a.name) for n in stub.body if isinstance(n, ast.ImportFrom)
             for a in n.names]  # fmt: skip
    assert sorted(envs.__all__) == sorted(name for _, name in pairs)
    for module, name in pairs:
        value = getattr(envs, name)
        assert getattr(sys.modules[f"podracer.envs.{module}"], name) is value, name
    assert set(envs.__all__) <= set(dir(envs))


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="nope"):
        envs.nope  # noqa: B018


def test_importing_the_package_and_families_does_not_import_jax():
    code = (
        "import sys; import podracer.envs, podracer.envs.families; "
        "from podracer.envs import EnvSpec, env_family, make, list_envs; "
        "EnvSpec('x', (1,), 'float32', 2).to_json(); "
        "assert env_family('envpool:Pong-v5') == 'atari'; "
        "print(sorted(m for m in ('jax', 'jaxlib', 'chex') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
