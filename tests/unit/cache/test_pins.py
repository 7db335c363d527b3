"""Run-time pins joined to a wheel's own requirements (what ``srcbuild install`` hands pip)."""

from __future__ import annotations

from srcbuild.cache.pins import pinned_requires
from srcbuild.knowledge.base import runtime_pins

PINS = ("pillow<10,!=8.3.*",)


def test_a_pin_joins_the_requirement_on_its_project() -> None:
    """One line per project (pip before 20.3 refuses a second one), its name as the wheel spells it."""
    assert pinned_requires(["numpy", "torch==1.7.1+cu92.sm30", "Pillow (>=4.1.1)"], PINS) == [
        "numpy",
        "torch==1.7.1+cu92.sm30",
        "Pillow!=8.3.*,<10,>=4.1.1",
    ]


def test_extras_and_markers_stay() -> None:
    assert pinned_requires(['pillow[tk]>=5; python_version >= "3.6"'], PINS) == [
        'pillow[tk]!=8.3.*,<10,>=5; python_version >= "3.6"'
    ]


def test_a_project_the_wheel_does_not_ask_for_is_not_installed() -> None:
    """A pin is a constraint: a torchvision built where pillow-simd was installed asks for pillow-simd."""
    assert pinned_requires(["pillow-simd>=4.1.1", "numpy"], PINS) == ["pillow-simd>=4.1.1", "numpy"]
    assert pinned_requires(["numpy"], ()) == ["numpy"]


def test_the_knowledge_base_pins_old_torchvision_below_pillow_10() -> None:
    """The versions install reads from a manifest carry the recipe's local label."""
    assert pinned_requires(["pillow>=4.1.1"], runtime_pins("torchvision", "0.8.2+cu92.sm30")) == [
        "pillow!=8.3.*,<10,>=4.1.1"
    ]
    assert pinned_requires(["pillow>=5.3.0,!=8.3.*"], runtime_pins("torchvision", "0.29.2+cu126.sm50.sm52")) == [
        "pillow!=8.3.*,>=5.3.0"
    ]
    assert pinned_requires(["numpy", "pillow>=5"], runtime_pins("torch", "1.7.1+cu92.sm30")) == ["numpy", "pillow>=5"]
