"""Import paths, `module:attr`: the one resolver behind every name given as code.

Environments and agents are named by import path on the command lines (`--env
my_pkg.envs:Corridor`, `--agent my_pkg.agents:make_tiny`), by entry points, and in the
`sources` a run's config.json records; `podracer.envs.registry` and
`podracer.agents.registry` both resolve them here.

A path names code to run with arguments a file or a command line chose, so what it
names is checked before anything calls it (`resolve`): a class of the kind asked for,
or a function whose return annotation says it makes one (`def make(...) -> JaxEnv`; a
subclass, a union of such, or an unresolved `"JaxEnv"` string annotation count too).
`os:system`, `builtins:exec` or `subprocess:run` are none of these, and are refused in
one line before any call. A module that fails to import, with any exception (a
`SyntaxError`, a `RuntimeError` it raises), is one line naming the path and the error.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Callable
from collections.abc import Collection
from typing import Any


def split_import_path(path: str) -> tuple[str, str] | None:
    """`(module, attr)` of `module:attr` (dotted identifiers each side), else None."""
    if not isinstance(path, str):
        return None
    module, sep, attr = path.partition(":")
    parts = [*module.split("."), *attr.split(".")]
    if not sep or not all(part.isidentifier() for part in parts):
        return None
    return module, attr


def import_path_of(obj: Any) -> str | None:
    """`module:qualname` of a module-level function or class (importable elsewhere);
    None for lambdas, closures, instances and what `__main__` defines."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def _where(owner: str, path: str) -> str:
    """`owner`, with the path where it does not already name it."""
    return owner if repr(path) in owner else f"{owner} ({path!r})"


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def import_module(module_name: str, where: str) -> Any:
    """`importlib.import_module`, failing in one ImportError line that starts with `where`
    and names the module and what it raised (any exception: a module's own errors too)."""
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError(f"{where}: cannot import {module_name!r} ({_one_line(e)})") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure of the user's module
        raise ImportError(
            f"{where}: importing {module_name!r} raised {type(e).__name__}: {_one_line(e)}"
        ) from None


def import_object(path: str, owner: str) -> Any:
    """The object `path` names, imported; nothing it names is called. Fails in one line:
    an ImportError naming the path and the exception where its module does not import
    (whatever it raised), a ValueError where the module lacks the attribute."""
    parts = split_import_path(path)
    if parts is None:
        raise ValueError(f"{owner}: {path!r} is not an import path module:attr")
    module_name, attr = parts
    where = _where(owner, path)
    obj = import_module(module_name, where)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{where}: module {module_name!r} has no {attr!r}") from None
    return obj


def _union_members(hint: Any) -> list[Any] | None:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(hint) if a is not type(None)]
    return None


def return_annotation_makes(
    function: Any, is_kind: Callable[[type], bool], names: Collection[str] = ()
) -> bool:
    """Whether `function`'s return annotation is a class `is_kind` accepts (or a union
    of them). An annotation that does not resolve (a name imported for type checkers
    only) counts where its last dotted name is one of `names` (`"JaxEnv"`)."""
    try:
        hint = typing.get_type_hints(function).get("return")
    except Exception:  # noqa: BLE001 - unresolvable annotations: judged by their text
        raw = getattr(function, "__annotations__", {}).get("return")
        if not isinstance(raw, str):
            return False
        words = [w.strip().strip("'\"") for w in raw.split("|")]
        return bool(names) and all(w.rpartition(".")[2] in names for w in words)
    if hint is None:
        return False
    members = _union_members(hint) or [hint]
    return all(isinstance(m, type) and is_kind(m) for m in members)


def resolve(
    path: str,
    owner: str,
    is_kind: Callable[[type], bool],
    accepted: str,
    *,
    names: Collection[str] = (),
    classes: bool = True,
    instance: Callable[[Any], bool] | None = None,
) -> Any:
    """The object `path` names, checked before anything calls it: a class `is_kind`
    accepts (`classes`), a function annotated to return one (see
    `return_annotation_makes`), or an object `instance` accepts. Anything else is a
    one-line ValueError naming `owner`, the path, what it is and what is `accepted`."""
    obj = import_object(path, owner)
    if isinstance(obj, type):
        if classes and is_kind(obj):
            return obj
        what = f"the class {obj.__module__}.{obj.__qualname__}"
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        if return_annotation_makes(obj, is_kind, names):
            return obj
        annotated = "return" in getattr(obj, "__annotations__", {})
        what = ("a function whose return annotation names no accepted kind" if annotated
                else "a function without a return annotation")  # fmt: skip
    elif instance is not None and instance(obj):
        return obj
    elif callable(obj):
        what = f"a {type(obj).__name__} (neither a class nor an annotated function)"
    else:
        what = f"a {type(obj).__name__}"
    raise ValueError(f"{_where(owner, path)}: it is {what}, and was not called; an import "
                     f"path must name {accepted}")  # fmt: skip
