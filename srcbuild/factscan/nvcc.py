"""What an nvcc wheel states about itself: the GPU targets of its ``ptxas`` and the host gcc bounds
of its ``crt/host_config.h``.

``ptxas --help`` lists the values ``--gpu-name`` accepts ("Allowed values for this option:
'compute_50', ..., 'sm_50', ..."); the list is built at run time, so the program is run (only
srcbuild.proc runs programs). ``host_config.h`` refuses a host gcc with ``#if __GNUC__ > 14``
(and, in some releases, a lower bound written ``__GNUC__ < N``).
"""

from __future__ import annotations

import re

from srcbuild.capability import ComputeCapability

_GPU_NAME_RE = re.compile(r"--gpu-name.*?Allowed values for this option:(.*?)(?:Default value|\n\s*\n)", re.DOTALL)
_SM_RE = re.compile(r"'sm_(\d+)[a-z]?'")
_TARGET_RE = re.compile(r"'(sm|compute)_(\d+)([a-z]?)'")
_GCC_ABOVE_RE = re.compile(r"__GNUC__\s*>\s*(\d+)")
_GCC_BELOW_RE = re.compile(r"__GNUC__\s*<\s*(\d+)")


def ptxas_targets(help_text: str) -> tuple[ComputeCapability, ...]:
    """The real GPUs (``sm_XY``, arch-specific ``a``/``f`` variants folded in) ``--gpu-name`` accepts."""
    match = _GPU_NAME_RE.search(help_text)
    if match is None:
        return ()
    sms = {int(sm) for sm in _SM_RE.findall(match.group(1))}
    return tuple(sorted(ComputeCapability.from_sm(sm) for sm in sms))


def ptxas_names(help_text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(SASS, PTX) targets ``--gpu-name`` accepts, as ptxas spells them without the prefix, arch-specific
    variants kept apart: ``("50", ..., "90", "90a", "100", "100a", "100f")`` from ``sm_*`` and the
    same from ``compute_*`` (``lto_*`` is left out: it is not a GPU)."""
    match = _GPU_NAME_RE.search(help_text)
    if match is None:
        return (), ()
    found: dict[str, set[tuple[int, str]]] = {"sm": set(), "compute": set()}
    for kind, number, variant in _TARGET_RE.findall(match.group(1)):
        found[kind].add((int(number), variant))
    return _names(found["sm"]), _names(found["compute"])


def _names(targets: set[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(f"{number}{variant}" for number, variant in sorted(targets))


def gcc_bounds(header: str) -> tuple[int | None, int | None]:
    """(lowest, highest) host gcc major ``host_config.h`` accepts; None where it states no bound."""
    above = [int(n) for n in _GCC_ABOVE_RE.findall(header)]
    below = [int(n) for n in _GCC_BELOW_RE.findall(header)]
    return (max(below) if below else None), (min(above) if above else None)
