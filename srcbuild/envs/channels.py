"""Channel names, aliases and mirrors: where a conda channel's packages are really fetched from.

A recipe names channels logically (``conda-forge``, ``pytorch`` or a full URL). ``ChannelRouting``
maps each name to the URL to use on this machine: a mirror given for that name
(``--channel-mirror conda-forge=https://mirror.example.edu/conda-forge``) wins, then a channel alias
(``--channel-alias URL`` or ``SRCBUILD_CHANNEL_ALIAS``: ``<alias>/<name>``), else the name itself,
which the installer resolves with its default alias. A URL channel is used as written.

Lockfiles store canonical URLs (the default alias), so one lockfile serves every mirror:
``canonical_url`` maps a fetched URL back, ``route_url`` maps a canonical URL to this machine's
mirror. Routing is not part of an environment's identity (its hash): the same packages from a
mirror make the same environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from srcbuild.errors import UsageError
from srcbuild.offline import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence
from srcbuild.records import record

ALIAS_VARIABLE = "SRCBUILD_CHANNEL_ALIAS"
MIRRORS_VARIABLE = "SRCBUILD_CHANNEL_MIRRORS"  # "name=url name2=url2" (spaces or commas)


def is_url(channel: str) -> bool:
    return "://" in channel


def default_channel_base(name: str) -> str:
    """The canonical base URL (with a trailing slash) of a named channel: the default alias + name."""
    from rattler import Channel  # the installer's own default alias, never spelled out here

    return str(Channel(name).base_url)


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


@record
class ChannelRouting:
    """How logical channel names become URLs on this machine."""

    alias: str | None = None
    mirrors: tuple[tuple[str, str], ...] = ()  # (channel name, base URL)

    @property
    def mirror_map(self) -> dict[str, str]:
        return dict(self.mirrors)

    def route(self, channel: str) -> str:
        """The channel to hand to an installer: a mirror URL, an alias URL or the name as given."""
        mirror = self.mirror_map.get(channel)
        if mirror is not None:
            return mirror.rstrip("/")
        if is_url(channel) or self.alias is None:
            return channel
        return f"{self.alias.rstrip('/')}/{channel}"

    def base_url(self, channel: str) -> str:
        """The URL packages of ``channel`` are fetched from here, with a trailing slash."""
        routed = self.route(channel)
        return _slash(routed) if is_url(routed) else default_channel_base(routed)

    def canonical_base(self, channel: str) -> str:
        return _slash(channel) if is_url(channel) else default_channel_base(channel)

    def canonical_url(self, url: str, channels: Iterable[str]) -> str:
        """A package URL as fetched here, written back against the channel's canonical base."""
        for channel in channels:
            base = self.base_url(channel)
            if url.startswith(base):
                return self.canonical_base(channel) + url[len(base) :]
        return url

    def route_url(self, url: str, channels: Iterable[str]) -> str:
        """A canonical package URL (from a lockfile), rewritten to be fetched through this routing.

        A named channel's URL is recognised by its shape, ``<any base>/<name>/<subdir>/<file>``,
        so no default address is needed (and nothing changes when no mirror or alias applies).
        """
        for channel in channels:
            routed = self.route(channel)
            if routed == channel:
                continue  # not mirrored: fetch from where the lockfile says
            if is_url(channel):
                if url.startswith(_slash(channel)):
                    return _slash(routed) + url[len(_slash(channel)) :]
                continue
            match = re.match(rf"^.*/{re.escape(channel)}/([^/]+/[^/]+)$", url)
            if match:
                return _slash(routed) + match.group(1)
        return url

    def describe(self) -> list[str]:
        lines = [f"channel alias: {self.alias}"] if self.alias else []
        lines += [f"mirror: {name} -> {url}" for name, url in self.mirrors]
        return lines

    def to_json(self) -> dict[str, object]:
        return {"alias": self.alias, "mirrors": dict(self.mirrors)}


def parse_mirror(text: str, source: str = "--channel-mirror") -> tuple[str, str]:
    """``NAME=URL`` -> (name, url); anything else is a UsageError naming where it came from."""
    name, sep, url = text.partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not name or not is_url(url):
        raise UsageError(
            f"{source} {text!r} is not NAME=URL",
            "write it as NAME=URL, e.g. conda-forge=https://mirror.example.edu/conda-forge",
        )
    return name, url


def routing_from(
    alias: str | None = None,
    mirrors: Iterable[str] = (),
    *,
    environ: Mapping[str, str],
) -> ChannelRouting:
    """Command-line values first, then ``SRCBUILD_CHANNEL_ALIAS`` / ``SRCBUILD_CHANNEL_MIRRORS``;
    with a mirror directory (``--mirror-dir``) its alias alone, whatever else is given."""
    dir_alias = env_value(environ, ALIAS_VARIABLE) if env_value(environ, MIRROR_DIR_VAR) else None
    if dir_alias:
        return ChannelRouting(alias=dir_alias)
    choice: Chosen[str | None] = precedence(
        Chosen(None, "default"), from_env(environ, ALIAS_VARIABLE, str), from_cli(alias or None, "--channel-alias")
    )
    chosen_alias = choice.value
    if chosen_alias is not None and not is_url(chosen_alias):
        raise UsageError(
            f"channel alias {chosen_alias!r} ({choice.origin}) is not a URL",
            "give a base URL such as https://mirror.example.edu/conda or file:///srv/conda",
        )
    pairs: dict[str, str] = {}
    env_mirrors = (env_value(environ, MIRRORS_VARIABLE) or "").replace(",", " ").split()
    for item in env_mirrors:
        name, url = parse_mirror(item, MIRRORS_VARIABLE)
        pairs[name] = url
    for item in mirrors:  # the command line overrides the environment
        name, url = parse_mirror(item)
        pairs[name] = url
    return ChannelRouting(alias=chosen_alias, mirrors=tuple(sorted(pairs.items())))
