"""Channel routing: mirrors, aliases, canonical and routed package URLs."""

from __future__ import annotations

import pytest

from srcbuild.envs.backends.rattler_backend import rattler_available
from srcbuild.envs.channels import ChannelRouting, parse_mirror, routing_from
from srcbuild.errors import UsageError

CHANNELS = ("conda-forge", "pytorch")


def test_mirror_wins_over_alias() -> None:
    mirrors = ["conda-forge=https://mirror.example.edu/cf/"]
    routing = routing_from("https://alias.example.org/conda", mirrors, environ={})
    assert routing.route("conda-forge") == "https://mirror.example.edu/cf"
    assert routing.route("pytorch") == "https://alias.example.org/conda/pytorch"
    assert routing.route("file:///srv/chan") == "file:///srv/chan"


@pytest.mark.skipif(not rattler_available(), reason="the default channel address comes from py-rattler")
def test_urls_round_trip_between_canonical_and_mirror() -> None:
    routing = ChannelRouting(mirrors=(("conda-forge", "file:///srv/cf"),))
    canonical = routing.canonical_base("conda-forge") + "linux-64/cmake-3.18.2-h0_0.tar.bz2"
    routed = routing.route_url(canonical, CHANNELS)
    assert routed == "file:///srv/cf/linux-64/cmake-3.18.2-h0_0.tar.bz2"
    assert routing.canonical_url(routed, CHANNELS) == canonical
    assert canonical.endswith("/conda-forge/linux-64/cmake-3.18.2-h0_0.tar.bz2")


def test_environment_variables_and_command_line() -> None:
    environ = {
        "SRCBUILD_CHANNEL_ALIAS": "https://a.example/c",
        "SRCBUILD_CHANNEL_MIRRORS": "pytorch=file:///p,x=file:///x",
    }
    routing = routing_from(None, ["pytorch=file:///cli"], environ=environ)
    assert routing.alias == "https://a.example/c"
    assert routing.mirror_map == {"pytorch": "file:///cli", "x": "file:///x"}
    assert routing.describe() == [
        "channel alias: https://a.example/c",
        "mirror: pytorch -> file:///cli",
        "mirror: x -> file:///x",
    ]


def test_bad_mirror_and_alias_are_usage_errors() -> None:
    with pytest.raises(UsageError) as err:
        parse_mirror("conda-forge")
    assert err.value.message == "--channel-mirror 'conda-forge' is not NAME=URL"
    assert err.value.hint == "write it as NAME=URL, e.g. conda-forge=https://mirror.example.edu/conda-forge"
    with pytest.raises(UsageError) as err:
        routing_from("mirror.example.edu", (), environ={})
    assert err.value.message == "channel alias 'mirror.example.edu' (command line --channel-alias) is not a URL"
    with pytest.raises(UsageError) as err:
        routing_from(environ={"SRCBUILD_CHANNEL_ALIAS": "mirror.example.edu"})
    assert err.value.message == "channel alias 'mirror.example.edu' (environment SRCBUILD_CHANNEL_ALIAS) is not a URL"


def test_route_url_needs_no_default_address() -> None:
    routing = ChannelRouting(alias="file:///srv/alias", mirrors=(("x", "https://m.example/x-mirror"),))
    url = "https://somewhere.example/conda-forge/noarch/six-1.16.0-py_0.tar.bz2"
    assert routing.route_url(url, ("conda-forge",)) == "file:///srv/alias/conda-forge/noarch/six-1.16.0-py_0.tar.bz2"
    assert routing.route_url(url, ("pytorch",)) == url  # not a URL of that channel
    assert ChannelRouting().route_url(url, ("conda-forge",)) == url  # nothing mirrored: unchanged
    own = "https://own.example/chan/linux-64/a-1-0.tar.bz2"
    assert (
        ChannelRouting(mirrors=(("https://own.example/chan", "file:///m"),)).route_url(
            own, ("https://own.example/chan",)
        )
        == "file:///m/linux-64/a-1-0.tar.bz2"
    )
