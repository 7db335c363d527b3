"""Which hosts a build will fetch from on this machine, stated before anything is fetched.

The sources of the answer are the resolved build's own decisions: the planned provisioning (NVIDIA's
download site, conda channels), the build environment a backend will make (its conda channels and
the package index for its pip packages; nothing when it exists already) and the source repository
(nothing when its checkout exists).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from srcbuild.resolve.model import ResolvedBuild

_HOST = re.compile(r"[a-z][a-z0-9+.-]*://([^/\s:]+)")


def _where(origin: str) -> str:
    """The host of the first URL in ``origin``, else ``origin``'s first word (a channel name)."""
    found = _HOST.search(origin)
    return found.group(1) if found else (origin.split() or ["?"])[0].rstrip(":")


def network_needs(resolved: ResolvedBuild) -> list[tuple[str, str]]:
    """``(host or channel, what comes from it)`` for a ``ResolvedBuild``, in the order a build fetches."""
    from srcbuild.envs.backends import installs_conda_packages

    needs: dict[str, list[str]] = {}
    for planned in resolved.provisioning:
        needs.setdefault(_where(planned.offer.origin), []).append(planned.offer.request.label)
    env = resolved.environment
    made = env.target is not None and env.target.exists()
    if not env.existing and env.spec is not None and not made:
        conda = env.backend is None or installs_conda_packages(env.backend)
        if conda:
            for channel in env.spec.channels:
                needs.setdefault(_where(str(channel)), []).append(f"the Python {env.python} environment")
        if env.spec.pip or not conda:
            needs.setdefault("the package index", []).append("the environment's pip packages")
    if not (resolved.checkout / ".git").exists():
        needs.setdefault(_where(resolved.pin.repo), []).append(f"{resolved.package.name} {resolved.pin.tag} sources")
    return [(host, ", ".join(dict.fromkeys(what))) for host, what in needs.items()]


def network_line(resolved: ResolvedBuild) -> str:
    """One line naming what :func:`network_needs` found, or that nothing is fetched."""
    needs = network_needs(resolved)
    if not needs:
        return "needs no network: everything is on this machine"
    return "fetches from: " + "; ".join(f"{host} ({what})" for host, what in needs)
