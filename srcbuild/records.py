"""``@record``: the frozen dataclasses srcbuild's data is made of, created for half the cost.

A record is exactly what ``@dataclass(frozen=True)`` makes: the same fields, ``__init__``,
immutability (``FrozenInstanceError``), ``dataclasses.fields``/``replace``/``asdict``, and the same
equality, hash and repr. The difference is where ``__eq__``, ``__hash__`` and ``__repr__`` come
from: ``dataclass`` compiles all three from source for every class (on Python 3.11, Debian 12's, one
``exec`` each), and each compile is paid when the module is imported. A short command such as
``srcbuild doctor`` imports about a hundred records before it does anything, and their creation was
close to half of its import time; here the three are shared functions that read the fields, kept per
class as ``operator.attrgetter`` tuples (measured: 3.9 million instructions per class with
``dataclass(frozen=True)``, 2.5 million with ``record``). The frozen ``__setattr__`` and
``__delattr__``, which ``dataclass`` also compiles from source per class (Python 3.10 to 3.12), are
closures over the class and its field names here, the same test in the same words
(``_frozen_get_del_attr``): 1.6 million instructions per class instead of 2.8 (callgrind, 200
classes of five fields, Python 3.11).

``__init__`` is ``dataclass``'s own, from the same source, but compiled once per shape: the source
is made with the fields named by position (``_0``, ``_1``, ...), compiled once, and each class's
function gets its fields' names back (``_shared_init_fn``); the compiled shapes are kept between
runs in the user's cache directory, as Python keeps a module's bytecode (``_compiled``). 200
classes of five fields: 464 million instructions with one compile each, 315 with one for all;
``srcbuild plan`` makes 168 records in 66 shapes, 811 million instructions compiling them and 726
reading them kept (Python 3.11, callgrind).

The semantics follow ``dataclass(frozen=True)`` (eq=True, frozen=True): ``__eq__`` compares the
fields with ``compare=True`` as tuples when both sides are of the same class, else
``NotImplemented``; ``__hash__`` hashes the tuple of the fields with ``hash=True``, or with
``hash=None`` and ``compare=True``; ``__repr__`` is ``QualName(field=value!r, ...)`` over the fields
with ``repr=True``, ``...`` for a recursive reference. A method the class body defines itself is
kept, as ``dataclass`` keeps it (an explicit ``__hash__``, not the ``None`` Python puts there for a
class that defines only ``__eq__``). ``tests/unit/test_frozen_records.py`` holds the two side by side.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import marshal
import os
import reprlib
import sys
import types
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:  # the type checker treats a record as the frozen dataclass it is
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda decorated: decorated


_EQ_KEY = "_record_eq_key"
_HASH_KEY = "_record_hash_key"
_REPR_NAMES = "_record_repr_names"


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function from an instance to the tuple of these attributes (a tuple for one or none, too)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = getattr(self.__class__, _EQ_KEY)
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(getattr(self.__class__, _HASH_KEY)(self))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(self.__class__, _REPR_NAMES))
    return f"{self.__class__.__qualname__}({shown})"


def _frozen_get_del_attr(cls: type, fields: list[dataclasses.Field[Any]], globals: object = None) -> tuple[Any, Any]:
    """``dataclasses._frozen_get_del_attr`` (Python 3.10 to 3.12) without compiling: the same two
    methods, raising the same ``FrozenInstanceError`` for the same names."""
    names = tuple(f.name for f in fields)
    owner: Any = cls
    frozen_error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in names:
            raise frozen_error(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in names:
            raise frozen_error(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    return __setattr__, __delattr__


def _named(field: dataclasses.Field[Any], name: str) -> dataclasses.Field[Any]:
    """A copy of ``field`` under another name."""
    copied: dataclasses.Field[Any] = object.__new__(dataclasses.Field)
    for slot in dataclasses.Field.__slots__:
        setattr(copied, slot, getattr(field, slot))
    copied.name = name
    return copied


# __init__'s factory (dataclasses' __create_fn__) by the text of its source: one compile per shape
_FACTORIES: dict[str, Any] = {}
# The compiled sources of earlier runs, kept as Python keeps a module's bytecode: every run makes the
# same few dozen shapes (srcbuild plan: 66, about 1.1 million instructions each to compile). One
# marshal file per interpreter version in the user's cache directory, beside the kept data tables
# (srcbuild.tables), read when a run first needs a compile and written when the run compiled one it
# did not hold; a file that cannot be read or written means compiling, as before.
_KEPT: dict[str, types.CodeType] | None = None
_KEPT_LIMIT = 4096  # shapes: far more than srcbuild and its tests make; a larger file is not written
_kept_changed = False


def _kept_file() -> Path:
    import platformdirs  # loaded by every command that resolves a path anyway

    return Path(platformdirs.user_cache_dir("srcbuild")) / "records" / f"init-{sys.hexversion:x}.marshal"


def _yours(st: os.stat_result) -> bool:
    """Whether a file or directory is this user's and nobody else may write it (the kept file is
    code: one that another user could have written is never read)."""
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read_kept() -> dict[str, types.CodeType]:
    path = _kept_file()
    try:
        with open(path, "rb") as fh:
            if not (_yours(os.fstat(fh.fileno())) and _yours(os.stat(path.parent))):
                return {}
            kept = marshal.loads(fh.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {k: v for k, v in kept.items() if isinstance(k, str) and isinstance(v, types.CodeType)}


def _write_kept() -> None:
    """The kept compiles, whole or not at all (written beside and renamed into place)."""
    if not _kept_changed or _KEPT is None or len(_KEPT) > _KEPT_LIMIT:
        return
    import tempfile

    try:
        path = _kept_file()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(marshal.dumps(_KEPT))
        os.replace(tmp, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _compiled(txt: str) -> types.CodeType:
    """``txt`` compiled as dataclasses compiles it (without this module's ``from __future__ import
    annotations``), or as a run before this one compiled it."""
    global _KEPT, _kept_changed
    if _KEPT is None:
        _KEPT = _read_kept()
        atexit.register(_write_kept)
    code = _KEPT.get(txt)
    if code is None:
        code = _KEPT[txt] = compile(txt, "<string>", "exec", dont_inherit=True)
        _kept_changed = True
    return code


def _cached_create_fn(
    name: str, args: Any, body: Any, *, globals: Any = None, locals: Any = None, return_type: Any = dataclasses.MISSING
) -> Any:
    """``dataclasses._create_fn`` (Python 3.10 to 3.12) that compiles each distinct source once."""
    if locals is None:
        locals = {}
    return_annotation = ""
    if return_type is not dataclasses.MISSING:
        locals["_return_type"] = return_type
        return_annotation = "->_return_type"
    args = ",".join(args)
    body = "\n".join(f"  {b}" for b in body)
    txt = f" def {name}({args}){return_annotation}:\n{body}"
    local_vars = ", ".join(locals.keys())
    txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
    factory = _FACTORIES.get(txt)
    if factory is None:
        ns: dict[str, Any] = {}
        exec(_compiled(txt), globals, ns)
        factory = _FACTORIES[txt] = ns["__create_fn__"]
    made = factory(**locals)
    if globals is None or made.__globals__ is globals:
        return made
    # the function of the class's own module, as dataclasses makes it (typing.get_type_hints reads them)
    own = types.FunctionType(made.__code__, globals, made.__name__, made.__defaults__, made.__closure__)
    own.__kwdefaults__ = made.__kwdefaults__
    own.__annotations__ = made.__annotations__
    own.__qualname__ = made.__qualname__
    return own


def _shared_init_fn(fields: list[Any], std_fields: list[Any], kw_only_fields: list[Any], *rest: Any) -> Any:
    """``dataclasses._init_fn`` that compiles the ``__init__`` of each shape once: the same source is
    made with the fields named by their position, compiled (or found compiled), and the function's
    code gets the fields' names back (parameters, the attribute names it sets, the closure's
    variables), as do its annotations and keyword defaults."""
    # short names (the source is parsed once per shape): none is a name of the source's own
    placeholders = [f"_{i}" for i in range(len(fields))]
    renamed = {id(f): _named(f, placeholder) for placeholder, f in zip(placeholders, fields)}
    create = dataclasses._create_fn  # type: ignore[attr-defined]
    dataclasses._create_fn = _cached_create_fn  # type: ignore[attr-defined]
    try:
        made = _COMPILED_INIT_FN(
            [renamed[id(f)] for f in fields],
            [renamed[id(f)] for f in std_fields],
            [renamed[id(f)] for f in kw_only_fields],
            *rest,
        )
    finally:
        dataclasses._create_fn = create  # type: ignore[attr-defined]
    # a field's name, and its closure variables' (the type of its annotation, its default)
    names = {}
    for placeholder, f in zip(placeholders, fields):
        names[placeholder] = f.name
        names[f"_type_{placeholder}"] = f"_type_{f.name}"
        names[f"_dflt_{placeholder}"] = f"_dflt_{f.name}"
    back = names.get

    code = made.__code__
    made.__code__ = code.replace(
        co_varnames=tuple(back(n, n) for n in code.co_varnames),
        co_freevars=tuple(back(n, n) for n in code.co_freevars),
        co_consts=tuple(back(c, c) if type(c) is str else c for c in code.co_consts),
    )
    made.__annotations__ = {back(k, k): v for k, v in made.__annotations__.items()}
    if made.__kwdefaults__:
        made.__kwdefaults__ = {back(k, k): v for k, v in made.__kwdefaults__.items()}
    return made


# Python 3.13 builds every method of a class in one compile (and another signature): left as it is.
_PATCH_FROZEN = sys.version_info < (3, 13) and hasattr(dataclasses, "_frozen_get_del_attr")
_PATCH_INIT = _PATCH_FROZEN and hasattr(dataclasses, "_init_fn") and hasattr(dataclasses, "_create_fn")
_COMPILED_INIT_FN: Any = getattr(dataclasses, "_init_fn", None)


def _frozen_dataclass(cls: type[T]) -> type[T]:
    if not _PATCH_FROZEN:
        return dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    compiled = dataclasses._frozen_get_del_attr  # type: ignore[attr-defined]
    dataclasses._frozen_get_del_attr = _frozen_get_del_attr  # type: ignore[attr-defined]
    if _PATCH_INIT:
        dataclasses._init_fn = _shared_init_fn  # type: ignore[attr-defined]
    try:
        return dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    finally:
        dataclasses._frozen_get_del_attr = compiled  # type: ignore[attr-defined]
        if _PATCH_INIT:
            dataclasses._init_fn = _COMPILED_INIT_FN  # type: ignore[attr-defined]


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)`` with shared ``__eq__``, ``__hash__`` and ``__repr__`` (module docstring)."""
    body = cls.__dict__
    own_eq = "__eq__" in body
    own_repr = "__repr__" in body
    # as dataclass decides it: a __hash__ of None beside the body's own __eq__ is Python's, not the class's
    declared_hash = body.get("__hash__", dataclasses.MISSING)
    own_hash = not (declared_hash is dataclasses.MISSING or (declared_hash is None and own_eq))
    made = _frozen_dataclass(cls)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]  # a dataclass from the line above
    setattr(made, _EQ_KEY, _values(tuple(f.name for f in fields if f.compare)))
    hashed = tuple(f.name for f in fields if f.hash or (f.hash is None and f.compare))
    setattr(made, _HASH_KEY, _values(hashed))
    setattr(made, _REPR_NAMES, tuple(f.name for f in fields if f.repr))
    for name, shared, own in (("__eq__", _eq, own_eq), ("__hash__", _hash, own_hash), ("__repr__", _repr, own_repr)):
        if not own:
            setattr(made, name, shared)
    return made
