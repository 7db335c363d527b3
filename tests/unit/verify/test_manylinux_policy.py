"""The manylinux tag decided from auditwheel's policy data: glibc, libstdc++ and libgcc_s versions
all bound it; versions of libraries no policy names (CUDA's) do not."""

from __future__ import annotations

from srcbuild.verify.manylinux import Need, decide_tag, listed, policies, policy_for_glibc


def needs(*versions: str, member: str = "torch/lib/libdemo.so") -> list[Need]:
    return [Need(v, member) for v in versions]


def test_the_policies_come_from_auditwheel_most_compatible_first() -> None:
    names = [p.name for p in policies("x86_64")]
    assert names[:3] == ["manylinux_2_5", "manylinux_2_12", "manylinux_2_17"]
    assert "manylinux_2_28" in names and "linux" not in names
    assert policies("aarch64")[0].name == "manylinux_2_17"  # pip's oldest there; no older policy names it
    m2014 = policy_for_glibc((2, 17), "x86_64")
    assert m2014 is not None and m2014.name == "manylinux_2_17"
    assert m2014.provides("GLIBCXX_3.4.19") and not m2014.provides("GLIBCXX_3.4.26")
    assert m2014.provides("libcudart.so.11.0")  # a library the policy does not name
    assert policy_for_glibc((2, 4), "x86_64") is None


def test_a_c_library_is_tagged_by_its_glibc() -> None:
    decided = decide_tag(needs("GLIBC_2.2.5", "GLIBC_2.14"), "x86_64")
    assert (decided.tag, decided.policy) == ("manylinux_2_17_x86_64", "manylinux_2_17")
    assert [n.text() for n in decided.held_back_by] == ["GLIBC_2.14 (libdemo.so)"]
    oldest = decide_tag(needs("GLIBC_2.2.5"), "x86_64")
    assert (oldest.tag, oldest.held_back_by) == ("manylinux_2_5_x86_64", ())
    assert decide_tag([], "aarch64").tag == "manylinux_2_17_aarch64"


def test_libstdcxx_versions_bound_the_tag_and_cuda_versions_do_not() -> None:
    cxx = needs("GLIBC_2.14", "GLIBCXX_3.4.21", "GLIBCXX_3.4.26", "CXXABI_1.3.9", "GCC_3.0", member="a/libfs.so")
    decided = decide_tag([*cxx, *needs("libcudart.so.11.0", member="a/libcuda_ops.so")], "x86_64")
    assert decided.tag == "manylinux_2_31_x86_64"  # manylinux_2_28's libstdc++ stops at GLIBCXX_3.4.24
    assert [n.text() for n in decided.held_back_by] == ["GLIBCXX_3.4.26 (libfs.so)"]
    linked = {"libcudart.so.11.0", "libstdc++.so.6", "libc.so.6"}
    assert decide_tag(cxx, "x86_64", linked).unbundled == ("libcudart.so.11.0",)  # named, not refused
    gcc = decide_tag(needs("GLIBC_2.17", "GCC_7.0.0"), "x86_64")
    assert gcc.tag == "manylinux_2_27_x86_64" and [n.version for n in gcc.held_back_by] == ["GCC_7.0.0"]


def test_more_than_the_newest_policy_provides_is_linux() -> None:
    decided = decide_tag(needs("GLIBC_2.17", "GLIBCXX_3.4.999"), "x86_64")
    assert (decided.tag, decided.policy) == ("linux_x86_64", "")
    assert [n.version for n in decided.held_back_by] == ["GLIBCXX_3.4.999"]
    assert decide_tag(needs("GLIBC_PRIVATE"), "x86_64").tag == "linux_x86_64"  # as auditwheel says


def test_listed() -> None:
    assert listed([]) == ""
    assert listed(["a", "b"]) == "a, b"
    assert listed([str(i) for i in range(7)]) == "0, 1, 2, 3, 4 and 2 more"
