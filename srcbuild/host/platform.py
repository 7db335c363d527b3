"""This machine's wheel platform tag and C library, read from the running interpreter, and the
manylinux platform tags another machine's glibc runs.

The platform tag (``linux_x86_64``, PEP 425) names the cache key's platform; the C library
(``glibc2.36``) is a fact about a built binary, not a request, so it stays out of the tag and is
measured instead (see ``srcbuild.cache.key``). ``compatible_platforms`` lists, for a machine named
by a manylinux tag, every manylinux tag whose wheels it runs (PEP 600), for ``pip download
--platform``.
"""

from __future__ import annotations

import os
import platform
import sysconfig

from srcbuild.patterns import LazyPattern


def host_platform_tag() -> str:
    """This machine's wheel platform tag, ``linux_x86_64`` (``sysconfig.get_platform()``, PEP 425).

    The C library is not part of it (``host_libc`` names it)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def host_libc() -> str:
    """This machine's C library, ``glibc2.36``: ``os.confstr("CS_GNU_LIBC_VERSION")`` with
    ``platform.libc_ver()`` as a fallback; empty when neither says."""
    libc = ""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        text = ""
    if text.startswith("glibc "):
        libc = "glibc" + text.split()[1]
    else:
        name, version = platform.libc_ver()
        if name and version:
            libc = f"{name}{version}"
    return libc


def host_machine() -> str:
    """The machine's architecture as Python names it, ``x86_64``."""
    return platform.machine()


# PEP 513, 571 and 599: the legacy manylinux names and the glibc they stand for (PEP 600 keeps them).
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_PEP600 = LazyPattern(r"manylinux_(\d+)_(\d+)_(\w+)\Z")
_LEGACY = LazyPattern(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)\Z")


def glibc_platform(glibc: str, machine: str) -> str:
    """The PEP 600 tag of a machine with ``glibc`` ("2.17") on ``machine``: ``manylinux_2_17_x86_64``."""
    major, _, minor = glibc.partition(".")
    return f"manylinux_{int(major)}_{int(minor)}_{machine}"


def platform_glibc(tag: str) -> tuple[int, int] | None:
    """The glibc a manylinux tag stands for: ``manylinux2014_x86_64`` and ``manylinux_2_17_x86_64``
    are (2, 17); None for any other tag (``linux_x86_64``, musllinux)."""
    legacy = _LEGACY.match(tag)
    if legacy:
        return LEGACY_MANYLINUX[legacy.group(1)]
    pep600 = _PEP600.match(tag)
    return (int(pep600.group(1)), int(pep600.group(2))) if pep600 else None


def compatible_platforms(tag: str) -> tuple[str, ...]:
    """The platform tags of the wheels a machine named by ``tag`` runs, newest first:
    ``manylinux_2_17_x86_64`` (or ``manylinux2014_x86_64``) runs ``manylinux_2_Y`` for every Y
    from 17 down to 5 and the legacy names of those glibc versions (PEP 600); any other tag
    (``linux_x86_64``) only itself."""
    legacy = _LEGACY.match(tag)
    pep600 = _PEP600.match(tag)
    if legacy:
        (major, minor), machine = LEGACY_MANYLINUX[legacy.group(1)], legacy.group(2)
    elif pep600:
        major, minor, machine = int(pep600.group(1)), int(pep600.group(2)), pep600.group(3)
    else:
        return (tag,)
    if major != 2:
        return (tag,)
    names = {version: name for name, version in LEGACY_MANYLINUX.items()}
    out: list[str] = []
    for each in range(minor, 4, -1):
        out.append(f"manylinux_2_{each}_{machine}")
        if (2, each) in names:
            out.append(f"{names[(2, each)]}_{machine}")
    return tuple(out)
