"""Import paths: what one names is checked before anything calls it, and a module that
fails to import is one line (issue #54: hostile input)."""

import sys
import textwrap

import pytest

from podracer.envs import JaxEnv
from podracer.envs import make
from podracer.envs import make_host
from podracer.envs.catch import Catch
from podracer.envs.imports import resolve
from podracer.envs.registry import is_env_class


def annotated_by_name(rows: int = 5) -> "JaxEnv":  # a string: resolved from this module
    return Catch(rows=rows)


def annotated_union(rows: int = 5) -> Catch | JaxEnv:
    return Catch(rows=rows)


def unannotated(rows: int = 5):
    return Catch(rows=rows)


def wrongly_annotated(rows: int = 5) -> int:
    return 3


@pytest.mark.parametrize(
    "path, kwargs",
    [
        ("os:system", {"command": "touch {file}"}),
        ("subprocess:run", {"args": ["touch", "{file}"]}),
        ("builtins:exec", {"source": "open({file!r}, 'w').close()"}),
        ("subprocess:Popen", {"args": ["touch", "{file}"]}),
        ("pathlib:Path.touch", {"self": "{file}"}),
    ],
)
def test_an_import_path_to_code_that_is_no_env_is_refused_before_it_is_called(
    tmp_path, path, kwargs
):
    file = str(tmp_path / "pwned")
    kwargs = {k: [x.format(file=file) for x in v] if isinstance(v, list) else v.format(file=file)
              for k, v in kwargs.items()}  # fmt: skip
    with pytest.raises(ValueError, match=rf"environment '{path}': it is .*was not called") as e:
        make(path, **kwargs)
    assert "\n" not in str(e.value) and "JaxEnv or HostEnv class" in str(e.value)
    with pytest.raises(ValueError, match="was not called"):
        make_host(path, num_envs=2, **kwargs)
    assert not (tmp_path / "pwned").exists()


def test_env_classes_and_annotated_factories_are_accepted():
    assert make(f"{__name__}:annotated_by_name", rows=4).spec.observation_shape == (4, 5)
    assert make(f"{__name__}:annotated_union", rows=6).spec.observation_shape == (6, 5)
    assert make("podracer.envs.catch:Catch", rows=3).spec.observation_shape == (3, 5)
    assert is_env_class(Catch) and is_env_class(JaxEnv) and not is_env_class(dict)
    refusals = {
        "unannotated": "without a return annotation",
        "wrongly_annotated": "whose return annotation names no accepted kind",
    }
    for name, what in refusals.items():
        with pytest.raises(ValueError, match=f"a function {what}, and was not called"):
            make(f"{__name__}:{name}")


def test_an_unresolved_string_annotation_counts_by_its_name(tmp_path, monkeypatch):
    (tmp_path / "typed_only.py").write_text(textwrap.dedent("""
        from __future__ import annotations
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from podracer.envs import JaxEnv, Missing

        def make(rows=5) -> JaxEnv:
            from podracer.envs.catch import Catch
            return Catch(rows=rows)

        def other() -> Missing:
            return None
    """))  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    assert make("typed_only:make", rows=3).spec.observation_shape == (3, 5)
    with pytest.raises(ValueError, match="was not called"):
        make("typed_only:other")


@pytest.mark.parametrize(
    "source, error",
    [
        ("raise RuntimeError('the database is down')", "RuntimeError: the database is down"),
        ("def broken(:\n    pass", "SyntaxError: "),
        ("import sys\nsys.exit(3)", "SystemExit: 3"),
        ("import no_such_dependency_xyz", "cannot import 'raising_"),
    ],
)
def test_a_module_that_fails_to_import_is_one_line_naming_the_path(
    tmp_path, monkeypatch, source, error
):
    module = f"raising_{abs(hash(source))}"
    (tmp_path / f"{module}.py").write_text(source + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as e:
        make(f"{module}:Env")
    message = str(e.value)
    assert message.startswith(f"environment '{module}:Env': ") and error in message
    assert "\n" not in message
    sys.modules.pop(module, None)


def test_resolve_names_the_owner_and_the_path():
    with pytest.raises(ValueError, match=r"^MyConfig.thing \('os:system'\): it is a "):
        resolve("os:system", "MyConfig.thing", is_env_class, "an env class")
    with pytest.raises(ValueError, match="is not an import path"):
        resolve("os", "MyConfig.thing", is_env_class, "an env class")


def test_a_gymnasium_id_s_module_that_fails_to_import_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("gymnasium")
    (tmp_path / "raising_gym_ids.py").write_text("raise RuntimeError('no ROMs')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as e:
        make_host("gymnasium:raising_gym_ids:Thing-v0", num_envs=2)
    assert str(e.value) == (
        "gymnasium:raising_gym_ids:Thing-v0: importing 'raising_gym_ids' raised "
        "RuntimeError: no ROMs"
    )
    sys.modules.pop("raising_gym_ids", None)
