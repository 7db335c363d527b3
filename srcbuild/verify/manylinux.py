"""The ``manylinux_X_Y`` tag a wheel's ELF files allow, decided with auditwheel's policies.

A machine of a manylinux policy provides a known set of symbol versions for each library the
policy names: glibc's ``GLIBC_``, libstdc++'s ``GLIBCXX_`` and ``CXXABI_``, libgcc_s's ``GCC_``
(and zlib's, libatomic's). auditwheel ships that set per policy and architecture
(pypa/auditwheel: src/auditwheel/policy/manylinux-policy.json, ``symbol_versions``); a wheel may
carry a policy's tag when every version its ELF files import from those libraries is in the set,
and ``auditwheel show``/``repair`` pick the most compatible such policy (the highest
``priority``; auditwheel/policy/__init__.py, ``policy_is_satisfied``). srcbuild decides the same
way from the same data, read as data (importlib.resources) rather than through auditwheel's Python
API, which changes between releases. A wheel built with a gcc whose libstdc++ is newer than the
policy's (``GLIBCXX_3.4.26`` on a manylinux2014 machine) gets the newer tag its symbols allow.

Versions of libraries no policy names (CUDA's ``libcudart.so.11.0``, MPI's) do not bound the tag,
and neither does auditwheel's list of the libraries a policy's machines provide (``lib_whitelist``):
the libraries outside it that the wheel links are not bundled, as the official torch wheels do,
and the machine provides them; the decision names them (``unbundled``).
No tag is older than the oldest pip accepts for the architecture (``symbols.oldest_glibc``). A
wheel that needs more than the newest policy provides is ``linux_<arch>``, as auditwheel says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from srcbuild.errors import EnvironmentError_
from srcbuild.records import record

POLICY_SOURCE = "auditwheel's manylinux policies (auditwheel/policy/manylinux-policy.json, pypa/auditwheel)"


@record
class Policy:
    """One manylinux policy for one architecture: the versions its machines provide per library."""

    name: str  # manylinux_2_17
    priority: int  # higher: more compatible (auditwheel's order)
    versions: Mapping[str, frozenset[str]]  # "GLIBCXX" -> {"3.4", ..., "3.4.19"}
    libraries: frozenset[str] = frozenset()  # the libraries its machines provide (lib_whitelist)

    @property
    def glibc(self) -> tuple[int, int]:
        _, major, minor = self.name.split("_")
        return int(major), int(minor)

    def provides(self, version: str) -> bool:
        """Whether this policy's machines provide ``version`` (``GLIBCXX_3.4.26``); True for the
        versions of a library the policy does not name."""
        library, _, number = version.partition("_")
        allowed = self.versions.get(library)
        return allowed is None or number in allowed


@record
class Need:
    """One version a wheel member imports, with the symbols linked against it."""

    version: str  # GLIBCXX_3.4.26
    member: str  # torch/lib/libtorch_cpu.so
    symbols: tuple[str, ...] = ()

    @property
    def library(self) -> str:
        return self.member.rsplit("/", 1)[-1]

    def text(self) -> str:
        """``GLIBCXX_3.4.26 (libfoo.so)``"""
        return f"{self.version} ({self.library})"


@record
class TagDecision:
    """The tag a wheel may carry and the versions that keep it from the next older tag."""

    tag: str  # manylinux_2_34_x86_64; linux_x86_64 when no policy provides everything
    policy: str  # manylinux_2_34; empty with linux_<arch>
    held_back_by: tuple[Need, ...]  # what the next older policy lacks (empty for the oldest)
    unbundled: tuple[str, ...] = ()  # linked, not in the wheel nor on every machine of the policy


def listed(texts: Iterable[str], limit: int = 5) -> str:
    """``GLIBCXX_3.4.29 (libfoo.so), GLIBC_2.34 (libbar.so) and 2 more``; empty for none."""
    texts = list(texts)
    more = f" and {len(texts) - limit} more" if len(texts) > limit else ""
    return ", ".join(texts[:limit]) + more


def _policy_data() -> list[dict[str, Any]]:
    from importlib import resources

    try:
        text = (resources.files("auditwheel") / "policy" / "manylinux-policy.json").read_text(encoding="utf-8")
        data = json.loads(text)
    except (ModuleNotFoundError, OSError, ValueError) as exc:
        raise EnvironmentError_(
            f"auditwheel's manylinux policy data cannot be read ({exc}): srcbuild decides platform tags with it",
            "python -m pip install 'auditwheel>=6.1,<7'",
        ) from exc
    return list(data)


@cache
def policies(arch: str) -> tuple[Policy, ...]:
    """auditwheel's manylinux policies that name ``arch``, most compatible first, none older than
    the oldest tag pip accepts there."""
    from srcbuild.verify.symbols import oldest_glibc

    found = []
    for entry in _policy_data():
        versions = entry.get("symbol_versions", {}).get(arch)
        if not str(entry.get("name", "")).startswith("manylinux_") or versions is None:
            continue
        policy = Policy(
            str(entry["name"]),
            int(entry["priority"]),
            {library: frozenset(numbers) for library, numbers in versions.items()},
            frozenset(entry.get("lib_whitelist", ())),
        )
        if policy.glibc >= oldest_glibc(arch):
            found.append(policy)
    return tuple(sorted(found, key=lambda p: -p.priority))


def needs_of(members: Mapping[str, Mapping[str, Iterable[str]]]) -> list[Need]:
    """One ``Need`` per member and version, from the ``versions`` of ``symbols.wheel_links``."""
    return [
        Need(version, member, tuple(sorted(symbols)))
        for member, versions in sorted(members.items())
        for version, symbols in sorted(versions.items())
    ]


def lacking(policy: Policy, needs: Iterable[Need]) -> list[Need]:
    """The needs ``policy``'s machines do not provide."""
    return [need for need in needs if not policy.provides(need.version)]


def policy_for_glibc(glibc: tuple[int, int], arch: str) -> Policy | None:
    """The newest policy of ``arch`` whose glibc is ``glibc`` or older (a sysroot's policy)."""
    fitting = [p for p in policies(arch) if p.glibc <= glibc]
    return max(fitting, key=lambda p: p.glibc) if fitting else None


def decide_tag(needs: Iterable[Need], arch: str, unbundled: Iterable[str] = ()) -> TagDecision:
    """The most compatible policy of ``arch`` that provides every need (module docstring).
    ``unbundled``: the libraries the wheel links but does not hold; those the policy's machines do
    not all provide (CUDA's, MPI's) are named in the decision, and do not bound the tag."""
    needs, unbundled = list(needs), set(unbundled)
    found = policies(arch)
    for i, policy in enumerate(found):
        if not lacking(policy, needs):
            older = tuple(lacking(found[i - 1], needs)) if i else ()
            return TagDecision(f"{policy.name}_{arch}", policy.name, older, tuple(sorted(unbundled - policy.libraries)))
    newest = found[-1] if found else Policy("", 0, {})
    return TagDecision(f"linux_{arch}", "", tuple(lacking(newest, needs)), tuple(sorted(unbundled - newest.libraries)))


def wheel_tag_decision(wheel: Path, platform_tags: Iterable[str] | None = None) -> TagDecision | None:
    """The decision for ``wheel`` (its ELF files); None when its tags name no Linux architecture."""
    from srcbuild.verify.symbols import linux_arch, wheel_links

    if platform_tags is None:
        from packaging.utils import parse_wheel_filename

        platform_tags = {t.platform for t in parse_wheel_filename(wheel.name)[3]}
    arch = linux_arch(platform_tags)
    if not arch:
        return None
    links = wheel_links(wheel)
    held = {member.rsplit("/", 1)[-1] for member in links}
    linked = {library for link in links.values() for library in link.libraries}
    needs = needs_of({member: link.versions for member, link in links.items()})
    return decide_tag(needs, arch, linked - held)


def wheel_platform_tag(wheel: Path) -> str:
    """The platform tag ``wheel``'s ELF files allow (what a portable build retags it with); empty
    when its tags name no Linux architecture."""
    decision = wheel_tag_decision(wheel)
    return decision.tag if decision is not None else ""
