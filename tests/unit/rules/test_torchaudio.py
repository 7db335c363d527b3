"""torchaudio as a package: its pairing with torch judged like torchvision's, its tags checked, and
the variables each era of it sets (the rows of knowledge/data/build.toml)."""

from __future__ import annotations

import pytest
from rule_combos import catalog, combo

from srcbuild.findings import Severity
from srcbuild.knowledge import load_knowledge
from srcbuild.resolve.resolver import resolve_unprobed
from srcbuild.rules import check_recipe


def _rules(**spec: object) -> dict[str, tuple[Severity, str, str]]:
    found = check_recipe(combo("kepler-cu92", **spec), catalog=catalog())  # type: ignore[arg-type]
    return {f.rule: (f.severity, f.message, f.fix) for f in found if f.rule.startswith("torchaudio")}


def test_the_catalogs_torchaudio_is_the_one_made_for_its_torch() -> None:
    assert _rules() == {}
    assert load_knowledge().paired_for("torchaudio", "1.7.1") == ("0.7.2",)
    assert load_knowledge().torch_for_package("torchaudio", "2.0.1") == "2.0.0"  # its wheels require torch==2.0.0


def test_a_torchaudio_of_another_torch_is_an_error_naming_the_right_one() -> None:
    severity, message, fix = _rules(torchaudio="v0.8.0")["torchaudio-torch"]
    assert severity is Severity.ERROR
    assert message == "torchaudio 0.8.0 belongs to torch 1.8.0, not torch 1.7.1."
    assert fix == "Use torchaudio v0.7.2."


def test_a_torchaudio_tag_never_released_names_its_neighbours() -> None:
    severity, message, fix = _rules(torchaudio="v0.7.1")["torchaudio-tag-never-released"]
    assert severity is Severity.ERROR
    assert message == "torchaudio v0.7.1 was never released: v0.7.0 was followed by v0.7.2."
    assert fix == "Use v0.7.0 or v0.7.2."


@pytest.mark.parametrize(
    ("torch", "audio", "sox", "ffmpeg"),
    [
        ("v1.7.1", "v0.7.2", "0", None),  # BUILD_SOX from 0.6; no FFmpeg bindings before 0.12
        ("v1.12.1", "v0.12.1", "0", "0"),
        ("v2.8.0", "v2.8.0", "0", "0"),
        ("v2.10.0", "v2.10.0", None, None),  # 2.9 dropped both (its wheels hold neither library)
    ],
)
def test_each_torchaudio_era_sets_its_own_switches(torch: str, audio: str, sox: str | None, ffmpeg: str | None) -> None:
    recipe = combo("kepler-k80-cu118", torch=torch, torchaudio=audio, torchvision=None)
    final = resolve_unprobed(recipe, "torchaudio", "linux_x86_64").env_changes.final_values()
    assert (final.get("BUILD_SOX"), final.get("USE_FFMPEG")) == (sox, ffmpeg)
    assert final["USE_CUDA"] == "1" and final["BUILD_VERSION"].startswith(audio[1:] + "+")


def test_a_python_the_torchaudio_release_was_never_published_for_is_a_warning() -> None:
    """torch 2.5.1 reaches Python 3.13, torchaudio 2.5.1's wheels stop at 3.12 (the index's cp tags)."""
    found = {f.rule: f for f in check_recipe(combo("kepler-k80-cu118", python="3.13"), catalog=catalog())}
    warning = found["torchaudio-python"]
    assert warning.severity is Severity.WARNING and warning.field == "torchaudio.tag"
    assert warning.message == "torchaudio 2.5.1 was published for Python 3.9 to 3.12, not 3.13."
    assert "torch-python" not in found
    assert "torchaudio-python" not in {f.rule for f in check_recipe(combo("kepler-k80-cu118"), catalog=catalog())}
