"""A portable build's cache entry: the manifest records the sysroot glibc and the tag; it round-trips,
a hostile value is refused, and a lookup fits it by its manylinux tag."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from srcbuild.cache.fit import Machine, fits, needed_glibc
from srcbuild.cache.manifest import Manifest
from srcbuild.errors import CacheIntegrityError
from tests.unit.cache.synthetic import make_manifest, make_wheel

PORTABLE = {"sysroot_glibc": "2.17", "platform_tag": "manylinux_2_17_x86_64"}


def test_a_portable_manifest_round_trips(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, tag="cp38-cp38-manylinux_2_17_x86_64")
    manifest = dataclasses.replace(make_manifest(wheel), portable=PORTABLE)
    assert json.loads(manifest.dumps())["portable"] == PORTABLE
    assert Manifest.loads(manifest.dumps()).portable == PORTABLE
    plain = make_manifest(make_wheel(tmp_path / "plain"))
    assert "portable" not in plain.to_json()
    assert needed_glibc(manifest) == (2, 17)
    assert fits(manifest, Machine("x86_64", (2, 17))) and not fits(manifest, Machine("x86_64", (2, 12)))


def test_a_hostile_portable_record_is_refused(tmp_path: Path) -> None:
    data = make_manifest(make_wheel(tmp_path)).to_json()
    data["portable"] = {"sysroot_glibc": "2.17", "platform_tag": "../../etc/passwd"}
    with pytest.raises(CacheIntegrityError, match="is not a wheel platform tag"):
        Manifest.from_json(data)
