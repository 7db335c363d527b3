"""This machine's wheel platform tag and C library, read from the running interpreter.

The platform tag (``linux_x86_64``, PEP 425) names the cache key's platform; the C library
(``glibc2.36``) is a fact about a built binary, not a request, so it stays out of the tag and is
measured instead (see ``srcbuild.cache.key``).
"""

from __future__ import annotations

import os
import platform
import sysconfig


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
