"""Every package's public API as Python, type checkers and IDEs see it.

Each package lists its public names once, in its `__init__.pyi`, which `lazy_loader`
reads at run time. Each name resolves from the module the stub names, no name hides a
submodule, importing a package imports no JAX until a name that needs it is used, and
pyright (basedpyright, from the dev group) resolves every name and the notebook entry
point's signature.
"""

import ast
import importlib
import json
import pathlib
import pkgutil
import shutil
import subprocess
import sys

import pytest

PACKAGES = ["podracer.envs", "podracer.search", "podracer.agents", "podracer.runs",
            "podracer.anakin", "podracer.sebulba"]  # fmt: skip


def stub_names(package: str) -> list[tuple[str, str]]:
    """(submodule, name) for each `from .submodule import name as name` of the stub."""
    root = pathlib.Path(importlib.import_module(package).__file__).parent
    tree = ast.parse((root / "__init__.pyi").read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and all(a.asname == a.name for a in node.names)
            found += [(node.module, a.name) for a in node.names]
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_from_its_module(package):
    module = importlib.import_module(package)
    root = pathlib.Path(module.__file__).parent
    assert (root / "py.typed").exists() and isinstance(module.__version__, str)
    names = [name for _, name in stub_names(package)]
    assert sorted(module.__all__) == sorted(names) and len(set(names)) == len(names)
    for submodule, name in stub_names(package):
        defined = importlib.import_module(f"{package}.{submodule}")
        assert getattr(module, name) is getattr(defined, name), f"{package}.{name}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_public_name_hides_a_submodule(package):
    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)


def test_anakin_train_is_the_function_and_its_module_imports():
    import podracer.anakin
    import podracer.anakin.run

    assert podracer.anakin.train is podracer.anakin.run.train


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


@pytest.mark.slow
def test_pyright_resolves_every_public_name(tmp_path):
    pyright = shutil.which("basedpyright", path=str(pathlib.Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("basedpyright (the workspace's dev group) is not installed")
    lines = [f"from {p} import {name}" for p in PACKAGES for _, name in stub_names(p)]
    lines += [
        "from podracer.anakin import AnakinConfig, train",
        "from podracer.runs import RunResult",
        "config: AnakinConfig = AnakinConfig(num_envs=8).replace({'ppo.learning_rate': 1e-3})",
        "result: RunResult = train(config, on_row=lambda row: print(row['env_steps']))",
        # Typed configs: an IDE completes what from_preset and replace return.
        "preset, _ = AnakinConfig.from_preset('catch', 'ppo')",
        "envs: int = preset.replace(seed=1).num_envs",
        "wrong: str = preset.replace(seed=1)  # an error expected",
        "from podracer.anakin import not_a_name  # an error expected",
    ]
    source = tmp_path / "uses_the_api.py"
    source.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "--outputjson", str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    errors = [d for d in json.loads(out.stdout)["generalDiagnostics"] if d["severity"] == "error"]
    lines_with_errors = {d["range"]["start"]["line"] + 1 for d in errors}
    assert lines_with_errors == {len(lines) - 1, len(lines)}, [e["message"] for e in errors]
    assert '"AnakinConfig" is not assignable to "str"' in errors[0]["message"], errors[0]
    assert '"not_a_name" is unknown import symbol' in errors[1]["message"]


def _module_imports() -> dict[str, set[str]]:
    """Each podracer module -> the podracer modules it imports (at any depth of its code,
    deferred imports too), a package's face (`__init__`) left out: faces load lazily."""
    files = {}
    for package in PACKAGES:
        root = pathlib.Path(importlib.import_module(package).__file__).parent
        for path in root.rglob("*.py"):
            if path.name != "__init__.py":
                rel = path.relative_to(root).with_suffix("").parts
                files[".".join((package, *rel))] = path
    graph = {}
    for name, path in files.items():
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in files:
                graph[name].add(node.module)
            elif isinstance(node, ast.ImportFrom) and node.module:
                graph[name] |= {f"{node.module}.{a.name}" for a in node.names} & files.keys()
    return graph


def test_no_module_imports_one_that_imports_it_back():
    graph = _module_imports()
    cycles = []
    for start in graph:  # a depth-first walk from each module back to itself
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for target in graph[node]:
                if target == start:
                    cycles.append(" -> ".join([*path, start]))
                elif target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
    assert not cycles, cycles
