"""``@record`` behaves as ``@dataclass(frozen=True)``: each class is declared both ways and compared."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from srcbuild.records import record

Decorator = Callable[[type], type]
BOTH: list[Decorator] = [dataclasses.dataclass(frozen=True), record]


def declare(deco: Decorator) -> dict[str, Any]:
    """The same set of classes under one decorator."""

    @deco
    class Point:
        x: int
        y: int = 0

    @deco
    class Empty:
        pass

    @deco
    class One:
        only: str

    @deco
    class Tagged:
        name: str
        note: str = dataclasses.field(default="", compare=False)
        secret: str = dataclasses.field(default="", repr=False)
        loose: float = dataclasses.field(default=0.0, hash=False)
        items: tuple[int, ...] = dataclasses.field(default_factory=tuple)

    @deco
    class Point3(Point):
        z: int = 0

    @deco
    class OwnEq:
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and abs(self.a - other.a) < 2

    @deco
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @deco
    class OwnRepr:
        a: int

        def __repr__(self) -> str:
            return "mine"

    @deco
    class Nested:
        inner: list[Any]

    return {c.__name__: c for c in (Point, Empty, One, Tagged, Point3, OwnEq, OwnHash, OwnRepr, Nested)}


def observe(deco: Decorator) -> list[object]:
    """Everything a caller can see of those classes; both decorators must give the same list."""
    c = declare(deco)
    p, q = c["Point"](1, 2), c["Point"](1, 2)
    seen: list[object] = [repr(p), p == q, p != q, hash(p) == hash(q), hash(p), p == (1, 2), p.__eq__((1, 2))]
    seen += [c["Point"](1) == c["Point"](1, 0), c["Point"](1, 2) == c["Point"](2, 1)]
    seen += [repr(c["Empty"]()), c["Empty"]() == c["Empty"](), hash(c["Empty"]()), repr(c["One"]("a"))]
    seen += [hash(c["One"]("a")), c["One"]("a") == c["One"]("a"), c["One"](float("nan")) == c["One"](float("nan"))]
    nan = float("nan")
    seen += [c["One"](nan) == c["One"](nan)]  # the same object: equal, as tuples compare
    t1 = c["Tagged"]("n", note="a", secret="s", loose=1.0)
    t2 = c["Tagged"]("n", note="b", secret="s", loose=1.0)
    t3 = c["Tagged"]("n", note="a", secret="s", loose=2.0)
    seen += [repr(t1), t1 == t2, hash(t1) == hash(t2), t1 == t3, hash(t1) == hash(t3), hash(t1)]
    p3 = c["Point3"](1, 2, 3)
    seen += [repr(p3), p3 == c["Point3"](1, 2, 3), p3 == c["Point"](1, 2), c["Point"](1, 2) == p3, hash(p3)]
    seen += [c["OwnEq"](1) == c["OwnEq"](2), c["OwnEq"](1) == c["OwnEq"](5), hash(c["OwnEq"](1))]
    seen += [hash(c["OwnHash"](1)), repr(c["OwnRepr"](1))]
    loop = c["Nested"]([])
    loop.inner.append(loop)
    seen += [repr(loop)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    seen += [dataclasses.replace(p, y=9), dataclasses.asdict(t1), [f.name for f in dataclasses.fields(p3)]]
    seen += [copy.deepcopy(p) == p, {p: 1}[q], len({p, q, c["Point"](2)})]
    seen += [p.__match_args__, c["Point"].__doc__]
    return [repr(s) if not isinstance(s, (bool, int)) else s for s in seen]


def test_record_is_seen_as_a_frozen_dataclass() -> None:
    assert observe(record) == observe(dataclasses.dataclass(frozen=True))


@pytest.mark.parametrize("deco", BOTH, ids=["dataclass", "record"])
def test_unhashable_field_fails_the_same(deco: Decorator) -> None:
    cls = declare(deco)["Nested"]
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        hash(cls([]))
