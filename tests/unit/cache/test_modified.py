"""Entries built from modified sources: recorded, kept apart by their entry key, never picked unasked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.cache.key import ResolvedFacts
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.store import WheelCache
from srcbuild.capability import ComputeCapability
from tests.unit.cache.synthetic import make_manifest, make_wheel

DIFF = "d" * 64


def modified(manifest: Manifest) -> Manifest:
    resolved = ResolvedFacts.from_json(manifest.resolved)
    extra = {**dict(resolved.extra), "source_diff": DIFF}
    facts = dataclasses.replace(resolved, extra=tuple(sorted(extra.items())))
    changes = {"diff_sha256": DIFF, "files": ["csrc/ops_01.c", "third_party/a/x.c"]}
    return dataclasses.replace(manifest, resolved=facts.to_json(), changes=changes, created=manifest.created + 1)


def test_a_modified_manifest_round_trips_with_its_own_entry_key(tmp_path: Path) -> None:
    clean = make_manifest(make_wheel(tmp_path, payload=b"x"))
    edited = modified(clean)
    assert not clean.modified and "modified" not in clean.to_json()
    assert edited.modified and edited.entry_key != clean.entry_key
    again = Manifest.loads(edited.dumps())
    assert again.modified and again.changed_files == ("csrc/ops_01.c", "third_party/a/x.c")
    assert again.to_json()["modified"] == {"diff_sha256": DIFF, "files": ["csrc/ops_01.c", "third_party/a/x.c"]}
    # stripping the "modified" object does not make it clean: the resolved facts still carry the diff
    data = edited.to_json()
    del data["modified"]
    assert Manifest.from_json(data).modified


def test_a_lookup_skips_a_modified_entry_unless_allowed(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "cache")
    wheel = make_wheel(tmp_path / "dist", payload=b"edited build")
    entry = cache.store(wheel, modified(make_manifest(wheel)))
    cc = [ComputeCapability.parse("3.0")]
    assert cache.lookup(entry.fingerprint, cc) is None
    found = cache.lookup(entry.fingerprint, cc, allow_modified=True)
    assert found is not None and found.key == entry.key
