"""Run-time pins joined to a wheel's own requirements before pip installs them.

A pin of the knowledge base (``tool_floor`` rows with ``stage = "run"``: ``pillow<10`` for
torchvision 0.12 and older, ``pillow!=8.3.*`` for every release) is added to the wheel's own
requirement on the same project (``pillow>=4.1.1`` becomes ``pillow!=8.3.*,<10,>=4.1.1``), keeping
that requirement's extras and marker. So it acts as a constraint: pip installs the project only when
the wheel asks for it, never a second requirement line on the same name (which pip before 20.3
refuses as a double requirement), and a wheel that asks for a different project (``pillow-simd``)
is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


def pinned_requires(requires: Sequence[str], pins: Sequence[str]) -> list[str]:
    """``requires`` (a wheel's ``Requires-Dist``) with each pin joined to the requirements on its project."""
    by_name: dict[str, Requirement] = {}
    for text in pins:
        parsed = Requirement(text)  # the knowledge base's rows, checked by its tests
        by_name[canonicalize_name(parsed.name)] = parsed
    out = []
    for line in requires:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            out.append(line)  # pip says what is wrong with it
            continue
        pin = by_name.get(canonicalize_name(requirement.name))
        if pin is None:
            out.append(line)
            continue
        requirement.specifier &= pin.specifier
        out.append(str(requirement))
    return out
