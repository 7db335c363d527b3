"""``@record``: the frozen dataclasses srcbuild's data is made of, created for half the cost.

A record is exactly what ``@dataclass(frozen=True)`` makes: the same fields, ``__init__``,
immutability (``FrozenInstanceError``), ``dataclasses.fields``/``replace``/``asdict``, and the same
equality, hash and repr. The difference is where ``__eq__``, ``__hash__`` and ``__repr__`` come
from: ``dataclass`` compiles all three from source for every class (on Python 3.11, Debian 12's, one
``exec`` each), and each compile is paid when the module is imported. A short command such as
``srcbuild doctor`` imports about a hundred records before it does anything, and their creation was
close to half of its import time; here the three are shared functions that read the fields, kept per
class as ``operator.attrgetter`` tuples (measured: 3.9 million instructions per class with
``dataclass(frozen=True)``, 2.5 million with ``record``).

The semantics follow ``dataclass(frozen=True)`` (eq=True, frozen=True): ``__eq__`` compares the
fields with ``compare=True`` as tuples when both sides are of the same class, else
``NotImplemented``; ``__hash__`` hashes the tuple of the fields with ``hash=True``, or with
``hash=None`` and ``compare=True``; ``__repr__`` is ``QualName(field=value!r, ...)`` over the fields
with ``repr=True``, ``...`` for a recursive reference. A method the class body defines itself is
kept, as ``dataclass`` keeps it (an explicit ``__hash__``, not the ``None`` Python puts there for a
class that defines only ``__eq__``). ``tests/unit/test_frozen_records.py`` holds the two side by side.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
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


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)`` with shared ``__eq__``, ``__hash__`` and ``__repr__`` (module docstring)."""
    body = cls.__dict__
    own_eq = "__eq__" in body
    own_repr = "__repr__" in body
    # as dataclass decides it: a __hash__ of None beside the body's own __eq__ is Python's, not the class's
    declared_hash = body.get("__hash__", dataclasses.MISSING)
    own_hash = not (declared_hash is dataclasses.MISSING or (declared_hash is None and own_eq))
    made = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]  # a dataclass from the line above
    setattr(made, _EQ_KEY, _values(tuple(f.name for f in fields if f.compare)))
    hashed = tuple(f.name for f in fields if f.hash or (f.hash is None and f.compare))
    setattr(made, _HASH_KEY, _values(hashed))
    setattr(made, _REPR_NAMES, tuple(f.name for f in fields if f.repr))
    for name, shared, own in (("__eq__", _eq, own_eq), ("__hash__", _hash, own_hash), ("__repr__", _repr, own_repr)):
        if not own:
            setattr(made, name, shared)
    return made
