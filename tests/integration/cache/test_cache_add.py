"""`srcbuild cache add`: a wheel srcbuild did not build, verified against the GPUs it is added for,
stored with its provenance and an honest key, then pushed, signed and pulled as any entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve.request import request_fingerprint
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

pytestmark = pytest.mark.integration


def community_wheel(tmp_path: Path, sass: list[int]) -> Path:
    """A torch wheel as a community builder publishes it: libtorch_cuda.so with SASS for ``sass``."""
    out = tmp_path / f"dist-{'-'.join(map(str, sass))}"
    out.mkdir(parents=True)
    lib = out / "libtorch_cuda.so"
    write_elf(lib, fatbin_container([("sass", sm) for sm in sass]), needed=["libcudart.so.11.0"])
    return write_wheel(
        out,
        "torch",
        "2.3.0",
        "cp310-cp310-linux_x86_64",
        {"torch/lib/libtorch_cuda.so": lib, "torch/version.py": b"cuda = '11.8'\n"},
    )


def test_a_downloaded_wheel_is_verified_recorded_and_keyed_as_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://example.org/kepler-wheels/torch-2.3.0-cp310-cp310-linux_x86_64.whl"
    short = community_wheel(tmp_path, [50])  # Maxwell kernels only: nothing a Kepler GPU runs
    assert main(["cache", "add", str(short), "--recipe", "kepler-k80-cu118", "--source", url]) == 6
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: {short.name} does not run on compute capability 3.5, 3.7 (it holds SASS 5.0); it was not added"
    )
    assert list(WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"])).entries()) == []

    wheel = community_wheel(tmp_path, [35, 37])
    assert main(["cache", "add", str(wheel), "--recipe", "kepler-k80-cu118", "--source", url, "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["extra"]["provenance"]["how"] == "downloaded" and added["extra"]["provenance"]["source"] == url
    assert added["extra"]["provenance"]["checked_for"] == {"recipe": "kepler-k80-cu118", "arch": ["3.5", "3.7"]}
    assert added["key_inputs"]["origin"] == "added" and added["recipe"] == {}
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-k80-cu118")
    assert added["fingerprint"] != request_fingerprint(recipe, "torch", os.environ)  # never srcbuild's build of it
    assert main(["install", "torch", "--recipe", "kepler-k80-cu118", "--dry-run", "--python", "/usr/bin/python3"]) == 9
    capsys.readouterr()
    assert main(["cache", "show", added["entry_key"][:12]]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert f"origin: added (downloaded from {url}), not built by srcbuild; checked for recipe kepler-k80-cu118" in shown

    by_hand = community_wheel(tmp_path / "mine", [61])
    assert main(["cache", "add", str(by_hand), "--arch", "6.1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"added {by_hand.name} (") and "runs on compute capability 6.1" in out


def test_an_added_wheel_is_pushed_signed_and_pulled_by_a_second_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "keys" / "signing-key"
    monkeypatch.setenv("SRCBUILD_SIGNING_KEY", str(key))
    assert main(["cache", "key", "new", "--comment", "alice@lab"]) == 0
    assert main(["cache", "trust", "add", f"{key}.pub"]) == 0
    wheel = community_wheel(tmp_path, [35, 37])
    assert main(["cache", "add", str(wheel), "--arch", "3.5,3.7", "--source", "https://example.org/w.whl"]) == 0
    share = tmp_path / "share"
    share.mkdir()
    assert main(["cache", "push", "--remote", str(share)]) == 0
    assert "signed" in capsys.readouterr().out
    other = tmp_path / "machine-b"
    assert main(["cache", "pull", "--remote", str(share), "--cache-dir", str(other)]) == 0
    (entry,) = WheelCache(other).entries()
    assert entry.manifest.extra["provenance"]["source"] == "https://example.org/w.whl"
    assert entry.wheel_path.read_bytes() == wheel.read_bytes()
