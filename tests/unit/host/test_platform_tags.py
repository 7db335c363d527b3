"""The manylinux platform tags a machine named by one tag runs (PEP 600 with the legacy names of
PEP 513, 571 and 599), for pip download --platform."""

from __future__ import annotations

from srcbuild.host.platform import compatible_platforms, glibc_platform, platform_glibc


def test_a_glibc_217_machine_runs_every_older_manylinux_tag_and_their_legacy_names() -> None:
    tags = compatible_platforms("manylinux2014_x86_64")
    assert tags == compatible_platforms("manylinux_2_17_x86_64") == compatible_platforms(
        glibc_platform("2.17", "x86_64")
    )
    assert tags[:3] == ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_16_x86_64")
    assert "manylinux2010_x86_64" in tags and tags[-2:] == ("manylinux_2_5_x86_64", "manylinux1_x86_64")
    assert not any("2_18" in t or "2_28" in t for t in tags)


def test_a_newer_machine_runs_the_older_tags_and_other_tags_stand_alone() -> None:
    tags = compatible_platforms("manylinux_2_28_aarch64")
    assert tags[0] == "manylinux_2_28_aarch64" and "manylinux2014_aarch64" in tags
    assert compatible_platforms("linux_x86_64") == ("linux_x86_64",)
    assert compatible_platforms("musllinux_1_2_x86_64") == ("musllinux_1_2_x86_64",)
    assert glibc_platform("2.28", "x86_64") == "manylinux_2_28_x86_64"


def test_the_glibc_a_tag_stands_for() -> None:
    assert platform_glibc("manylinux2014_x86_64") == platform_glibc("manylinux_2_17_x86_64") == (2, 17)
    assert platform_glibc("manylinux1_x86_64") == (2, 5)
    assert platform_glibc("manylinux_2_28_aarch64") == (2, 28)
    assert platform_glibc("linux_x86_64") is None and platform_glibc("musllinux_1_2_x86_64") is None
