"""The catalog's torchaudio pins against the real wheels of the package index.

For each torchaudio release a catalog recipe pins, its wheel from the index (pinned by file name
and sha256) states the torch it was built for (``Requires-Dist: torch==X``) and the commit it was
built from (``torchaudio/version.py``'s ``git_version``). The knowledge base must pair that
release with that torch, the recipes that pin it must pin that torch and that commit, and the
wheel's CUDA-less build must still hold libtorchaudio (where 0.10 and later keep their kernels).
"""

from __future__ import annotations

import os
import re
import zipfile
from email.parser import BytesParser

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from srcbuild.knowledge import load_knowledge
from srcbuild.packages import version_of_tag
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.real.artifacts import Artifact, fetch

pytestmark = pytest.mark.real

# Linux x86_64 wheels of the index; the sha256 is the index's (docs/sources.md "Tag commits").
WHEELS = {
    "0.7.2": Artifact(
        "torchaudio", "0.7.2", "torchaudio-0.7.2-cp36-cp36m-manylinux1_x86_64.whl",
        "f310c90fbf283f7caea5b7788cf44b0d2a41615740120e59e0bd882f404e5c25",
    ),
    "2.5.1": Artifact(
        "torchaudio", "2.5.1", "torchaudio-2.5.1-cp310-cp310-manylinux1_x86_64.whl",
        "abacbec3b6d695cf99ada8b1db55db933181c8ff7d283e246e2bbefdde674235",
    ),
    "2.8.0": Artifact(
        "torchaudio", "2.8.0", "torchaudio-2.8.0-cp310-cp310-manylinux_2_28_x86_64.whl",
        "58f912bf2d289c709b42a55475b2b483becec79d9affb7684b606bb1f896b434",
    ),
}


def _metadata(wheel: zipfile.ZipFile) -> tuple[str | None, str]:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = BytesParser().parsebytes(wheel.read(name))
    pins = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    torch = next((str(r.specifier) for r in pins if r.name == "torch"), None)
    version_py = wheel.read("torchaudio/version.py").decode()
    found = re.search(r"git_version\s*=\s*'([0-9a-f]{40})'", version_py)
    assert found is not None, version_py
    return torch, found.group(1)


@pytest.mark.parametrize("release", sorted(WHEELS))
def test_the_wheel_states_the_pairing_and_the_commit_the_catalog_pins(release: str) -> None:
    with zipfile.ZipFile(fetch(WHEELS[release])) as wheel:
        requires, commit = _metadata(wheel)
        libraries = [n for n in wheel.namelist() if n.endswith(".so")]
    assert requires is not None and requires.startswith("==")
    torch = requires[2:]
    assert release in load_knowledge().paired_for("torchaudio", torch), (release, torch)
    pinned = [
        r
        for r in RecipeCatalog(Paths.resolve(environ=os.environ)).scan()[0]
        if (p := r.pin_of("torchaudio")) is not None and version_of_tag(p.tag) == release
    ]
    assert pinned, f"no catalog recipe pins torchaudio {release}"
    for recipe in pinned:
        assert version_of_tag(recipe.torch.tag) == torch, recipe.name
        pin = recipe.pin_of("torchaudio")
        assert pin is not None and pin.commit == commit, recipe.name
    if Version(release) >= Version("0.10"):  # 0.10 and later: the CUDA ops live in lib/libtorchaudio.so
        assert "torchaudio/lib/libtorchaudio.so" in libraries


def test_knowledge_scan_checks_the_torchaudio_map_against_the_wheels(capsys: pytest.CaptureFixture[str]) -> None:
    """``srcbuild knowledge scan --check`` reads torchaudio wheels as it reads torchvision's: the
    row each one settles, and no contradiction with the shipped map."""
    from srcbuild.cli import main

    assert main(["knowledge", "scan", "--check", *(str(fetch(w)) for w in WHEELS.values())]) == 0
    out = capsys.readouterr().out
    assert 'torchaudio = { "1.7.1" = ["0.7.2"] }' in out and 'torchaudio = { "2.8.0" = ["2.8.0"] }' in out
    assert out.count("# agrees: torch.toml torchaudio") == len(WHEELS)
    assert "no contradiction" in out
