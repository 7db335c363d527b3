"""The bounds of a cache remote's HTTP traffic (``NetLimits``), and the settings that change them.

A leaf: ``remotes`` keeps the limits in its options without importing the HTTP machinery
(``netio``: ``http.client``, ``ssl``, ``urllib.request``), which only a command that talks to an
HTTP remote loads. ``netio``'s docstring says what each bound does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from srcbuild.errors import UsageError
from srcbuild.precedence import env_value
from srcbuild.records import record

KiB = 1024
GiB = 1024 * 1024 * KiB


@record
class NetLimits:
    """The bounds of one remote's traffic (see the module docstring)."""

    read_timeout: float = 30.0
    deadline: float = 120.0
    speed_limit: int = 16 * KiB
    speed_time: float = 30.0
    max_requests: int = 10_000
    max_bytes: int = 256 * GiB

    SETTINGS = {  # noqa: RUF012 - a class-level table, not a field
        "SRCBUILD_NET_TIMEOUT": ("read_timeout", float),
        "SRCBUILD_NET_DEADLINE": ("deadline", float),
        "SRCBUILD_NET_MAX_REQUESTS": ("max_requests", int),
        "SRCBUILD_NET_MAX_BYTES": ("max_bytes", int),
    }

    @classmethod
    def resolve(cls, environ: Mapping[str, str]) -> NetLimits:
        """The defaults, raised or lowered by the ``SRCBUILD_NET_*`` settings."""
        values: dict[str, Any] = {}
        for name, (field, kind) in cls.SETTINGS.items():
            raw = (env_value(environ, name) or "").strip()
            if not raw:
                continue
            try:
                value = kind(raw)
            except ValueError:
                value = 0
            if not value > 0:
                raise UsageError(f"{name}={raw!r}: not a positive number", f"set it like {name}={getattr(cls, field)}")
            values[field] = value
        return cls(**values)

    @property
    def min_rate(self) -> float:
        """The slowest average rate a body may arrive at (bytes per second)."""
        return self.speed_limit / self.speed_time
