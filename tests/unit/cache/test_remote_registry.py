"""A cache remote is one module behind ``CacheRemote`` and one ``REMOTE_KINDS`` line: a new kind
registered with that alone is pushed to and pulled from by ``srcbuild cache``, and what it returns
is checked like any other remote's (nothing outside the registry knows the kinds)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import srcbuild
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes import REMOTE_KINDS, RemoteOptions
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.cli import main
from tests.unit.cache.synthetic import make_manifest, make_wheel

ROOT = Path(srcbuild.__file__).parent


class MemoryRemote:
    """A remote as a new module would write it: entries kept in a dict (a stand-in for a service)."""

    writable = True
    shared: dict[str, tuple[Manifest, bytes, bytes | None]] = {}  # noqa: RUF012 - one store per test

    def __init__(self, url: str, options: RemoteOptions) -> None:
        self.url = url
        self.refused: list[tuple[str, str]] = []

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        return [m for m, _, _ in self.shared.values() if fp is None or m.fingerprint == fp]

    def signature(self, manifest: Manifest) -> bytes | None:
        return self.shared[manifest.sha256][2]

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        wheel_to.write_bytes(self.shared[manifest.sha256][1])
        return False

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        if entry.manifest.sha256 in self.shared:
            return False
        self.shared[entry.manifest.sha256] = (entry.manifest, entry.wheel_path.read_bytes(), signature)
        return True

    def check(self, for_push: bool = False) -> None:
        return None


def test_a_new_remote_kind_is_one_module_and_one_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(REMOTE_KINDS, "mem", MemoryRemote)  # the registry line
    MemoryRemote.shared.clear()
    cache = WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"]))
    wheel = make_wheel(tmp_path / "w", version="1.7.1+cu92.sm30", payload=b"x" * 1000)
    cache.store(wheel, make_manifest(wheel, sass=(30,), ptx=(30,), commit="1" * 40, created=1000.0))
    assert main(["cache", "push", "--unsigned", "--remote", "mem://team"]) == 0
    assert capsys.readouterr().out.endswith("1 sent\n")
    other = tmp_path / "other"
    assert main(["cache", "pull", "--trust-unsigned", "--remote", "mem://team", "--cache-dir", str(other)]) == 0
    assert capsys.readouterr().out.endswith("1 fetched\n")
    [entry] = list(WheelCache(other).entries())
    assert entry.wheel_path.read_bytes() == wheel.read_bytes()

    # what a remote returns is checked whatever its kind: a wheel changed on the way is refused
    [(manifest, data, signature)] = MemoryRemote.shared.values()
    MemoryRemote.shared[manifest.sha256] = (manifest, data[:-1] + b"y", signature)
    shutil.rmtree(other)
    assert main(["cache", "pull", "--trust-unsigned", "--remote", "mem://team", "--cache-dir", str(other)]) != 0
    assert capsys.readouterr().out.endswith("1 rejected\n")
    assert not list(WheelCache(other).entries())


def test_no_module_outside_the_registry_branches_on_a_remote_kind() -> None:
    kinds = "|".join(re.escape(k) for k in REMOTE_KINDS if k != "file")
    by_kind = re.compile(rf"""(startswith\(\(?|==\s*)["']({kinds})(://)?["']""")
    found = [
        f"{path.relative_to(ROOT.parent)}:{number}: {line.strip()}"
        for path in sorted(ROOT.rglob("*.py"))
        if ROOT / "cache" / "remotes" not in path.parents
        and path.parent != ROOT / "compiler_cache"  # sccache's own storage URLs, not cache remotes
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if by_kind.search(line) and "remote" in line.lower()
    ]
    assert found == []
