"""Whether a toolchain route's host can be reached from here: a cheap probe, bounded in time.

A route (a provider's offer) fetches from one place: NVIDIA's download host or the mirror that
replaces it (redist, runfile), the Debian mirror apt is configured with (debian). ``Reach`` opens
one TCP connection to that host (through the proxy the environment names for it, when one does),
or checks that a mirror directory exists, and waits at most ``PROBE_SECONDS``; each host is
probed once per process. Routes that fetch through pip or conda, and every route under
``--offline`` or ``--mirror-dir`` (whose own checks name what is missing), are not probed.

``ordered`` puts the offers whose host answers first, in their order, so that ``doctor``, ``plan``
and ``toolchain install`` all use the route that will really work; ``Passed`` records each route
passed over and why, which the caller prints as one line.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

from srcbuild.records import record
from srcbuild.toolchain.download import mirrored_url
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.providers import PROVIDERS
from srcbuild.toolchain.providers.base import Offer

PROBE_SECONDS = 3.0
_MEMO: dict[str, str | None] = {}  # probe target -> why it cannot be reached (None: it can)


@record
class Passed:
    """A route passed over: its provider, where it fetches from, and why it cannot be used."""

    provider: str
    where: str
    why: str

    def line(self, used: str | None) -> str:
        then = f"; using route {used}" if used else ""
        return f"route {self.provider} ({self.where}) cannot be reached: {self.why}{then}"


def _target(url: str) -> str:
    return url if "://" in url else Path(url).absolute().as_uri()


def _connect(host: str, port: int, out: list[str | None]) -> None:
    import socket  # only when a route is probed

    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            out.append(None)
    except OSError as exc:
        out.append(str(getattr(exc, "strerror", None) or exc))


def probe(url: str, environ: Mapping[str, str]) -> str | None:
    """Why ``url``'s host cannot be reached (None when it can): a mirror directory must exist, an
    http(s) host must accept a connection within ``PROBE_SECONDS`` (its proxy's, when one is set)."""
    parsed = urllib.parse.urlparse(_target(url))
    if parsed.scheme == "file":
        path = Path(urllib.parse.unquote(parsed.path))
        return None if path.exists() else f"{path} does not exist"
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return None
    host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
    proxies = {k.lower(): v for k, v in environ.items() if k.lower().endswith("_proxy") and v}
    proxy = proxies.get(f"{parsed.scheme}_proxy") or proxies.get("all_proxy")
    bypass = proxies.get("no_proxy", "")
    if proxy and not any(host.endswith(n.strip().lstrip(".")) for n in bypass.split(",") if n.strip()):
        through = urllib.parse.urlparse(proxy if "://" in proxy else f"http://{proxy}")
        host, port = through.hostname or host, through.port or 3128
    key = f"{host}:{port}"
    if key not in _MEMO:
        import threading

        out: list[str | None] = []
        worker = threading.Thread(target=_connect, args=(host, port, out), daemon=True)
        worker.start()
        worker.join(PROBE_SECONDS)  # a name lookup is not bounded by the socket's timeout: the join is
        _MEMO[key] = out[0] if out else f"no answer from {key} within {PROBE_SECONDS:g} s"
    why = _MEMO[key]
    return f"{key}: {why}" if why else None


@record
class Reach:
    """How to tell where each route fetches from; ``passed_over`` probes (see the module docstring)."""

    facts: ToolchainFacts
    environ: Mapping[str, str]
    mirror: str | None = None  # --mirror / SRCBUILD_NVIDIA_MIRROR / toolchain.toml: replaces NVIDIA's hosts
    off: bool = False  # --offline or --mirror-dir: nothing is probed

    def source(self, offer: Offer) -> str | None:
        """The URL (or mirror directory) the offer's route fetches from, when it is probed: the
        provider says (``Provider.reached_at``), on the NVIDIA mirror when one is set."""
        url = PROVIDERS[offer.provider].reached_at(offer, self.facts)
        return mirrored_url(url, self.mirror) if url else None

    def passed_over(self, offer: Offer) -> Passed | None:
        """Why the offer's route cannot be used from here, or None when it can (or is not probed)."""
        if self.off:
            return None
        url = self.source(offer)
        why = probe(url, self.environ) if url else None
        if why is None or url is None:
            return None
        parsed = urllib.parse.urlparse(_target(url))
        where = parsed.netloc if parsed.scheme in ("http", "https") else url
        return Passed(offer.provider, where, why)


def ordered(offers: Sequence[Offer], reach: Reach | None) -> tuple[list[Offer], list[Passed]]:
    """The offers whose route can be reached first (in their order), then the others; and the
    routes passed over before the first usable one. One probe when the first route answers; none
    when there is only one offer (nothing to fall through to)."""
    if reach is None or len(offers) < 2:
        return list(offers), []
    passed: list[Passed] = []
    for i, offer in enumerate(offers):
        why = reach.passed_over(offer)
        if why is None:
            return [*offers[i:], *offers[:i]], passed
        passed.append(why)
    return list(offers), passed
