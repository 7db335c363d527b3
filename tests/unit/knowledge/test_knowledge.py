"""The knowledge base: every data file loads, every row has a source, and the queries answer right."""

from __future__ import annotations

import re

import pytest

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge import load_knowledge, versions
from srcbuild.knowledge.base import KnowledgeBase

CC = ComputeCapability.parse


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_knowledge()


def test_load_is_cached(kb: KnowledgeBase) -> None:
    assert load_knowledge() is kb


def test_every_row_has_a_source(kb: KnowledgeBase) -> None:
    groups = (
        kb.cuda_releases,
        kb.gcc_caveats,
        kb.driver_branches,
        kb.driver_limits,
        kb.gpu_chips,
        kb.torch_releases,
        kb.cudnn_releases,
        kb.breakages,
        kb.tool_floors,
    )
    for rows in groups:
        assert rows
        for row in rows:
            assert row.source.strip(), row
    for release in kb.cuda_releases:
        for patch in release.patches:
            assert patch.source.strip()


def test_cuda_arch_windows(kb: KnowledgeBase) -> None:
    assert kb.cuda("10.2").max_cc == CC("7.5")  # type: ignore[union-attr]
    assert kb.cuda("10.2").accepts_cc(CC("3.0"))  # type: ignore[union-attr]
    assert not kb.cuda("11.0").accepts_cc(CC("3.0"))  # type: ignore[union-attr]
    assert not kb.cuda("12.0").accepts_cc(CC("3.7"))  # type: ignore[union-attr]
    assert not kb.cuda("13.0").accepts_cc(CC("6.1"))  # type: ignore[union-attr]
    assert not kb.cuda("9.0").accepts_cc(CC("2.1"))  # type: ignore[union-attr]
    assert [r.version for r in kb.cuda_window(CC("3.0"))] == ["8.0", "9.0", "9.1", "9.2", "10.0", "10.1", "10.2"]
    assert kb.cuda_window(CC("3.7"))[-1].version == "11.8"
    assert kb.cuda_window(CC("6.1"))[-1].version == "12.9"
    assert kb.cuda("7.0") is None
    assert kb.cuda("not-a-version") is None


def test_cuda_patch_level_nuance(kb: KnowledgeBase) -> None:
    assert kb.cuda("11.4.0").max_gcc == 10  # type: ignore[union-attr]
    assert kb.cuda("11.4.1").max_gcc == 11  # type: ignore[union-attr]
    line = kb.cuda("11.4")
    assert line is not None and line.max_gcc == 11 and line.line == "11.4"
    assert [p.upto_version for p in line.unresolved_patches] == ["11.4.0"]
    assert kb.cuda("11.4.3").min_driver == "470.82.01"  # type: ignore[union-attr]
    assert kb.cuda("11.4.1").min_driver == "470.57.02"  # type: ignore[union-attr]
    assert kb.cuda("11.4.0").min_driver == "470.42.01"  # type: ignore[union-attr]
    twelve_three = kb.cuda("12.3")
    # nvcc 12.3's own host_config.h refuses gcc 13 (Spack agrees; torch's extension table does not)
    assert twelve_three is not None and (twelve_three.max_gcc, twelve_three.max_gcc_warn) == (12, None)


def test_drivers(kb: KnowledgeBase) -> None:
    fermi, kepler30, kepler37 = (kb.last_driver_for(CC(c)) for c in ("2.1", "3.0", "3.7"))
    assert (fermi.generation, fermi.last_branch, fermi.last_cuda) == ("Fermi", 390, "8.0")
    assert (kepler30.generation, kepler30.last_branch, kepler30.last_cuda) == ("Kepler", 470, "10.2")
    assert (kepler37.last_branch, kepler37.last_cuda) == (470, "11.8")
    for cc in ("5.0", "6.1", "7.0"):
        assert kb.last_driver_for(CC(cc)).last_branch == 580
    assert kb.last_driver_for(CC("8.6")).last_branch is None
    assert kb.max_cuda_for_driver("470.82.01") == "11.4"
    assert kb.max_cuda_for_driver("470.42.01") == "11.4"
    assert kb.max_cuda_for_driver("465.19.01") == "11.3"
    assert kb.max_cuda_for_driver("580.95.05") == "13.0"
    assert kb.max_cuda_for_driver("340.108") is None
    assert kb.driver_branch(470).cuda == "11.4"  # type: ignore[union-attr]


def test_gpu_by_pci_id(kb: KnowledgeBase) -> None:
    chip = kb.gpu_by_pci_id(0x0FE9)
    assert chip is not None and (chip.name, chip.cc) == ("GK107", CC("3.0"))
    assert chip.device_name(0x0FE9) == "GeForce GT 750M Mac Edition"
    assert kb.gpu_by_pci_id(0x102D).cc == CC("3.7")  # type: ignore[union-attr]  # Tesla K80
    assert kb.gpu_by_pci_id(0x1C90).cc == CC("6.1")  # type: ignore[union-attr]  # MX150
    assert kb.gpu_by_pci_id(0x13BB).cc == CC("5.0")  # type: ignore[union-attr]  # Quadro K620 is Maxwell
    # an id pci.ids does not list falls back to its chip's range
    assert kb.gpu_by_pci_id(0x11BE).name == "GK104"  # type: ignore[union-attr]
    assert kb.gpu_by_pci_id(0x1E04).cc == CC("7.5")  # type: ignore[union-attr]  # Turing range
    assert kb.gpu_by_pci_id(0x0001) is None


def test_gpus_by_name_loose_and_unique(kb: KnowledgeBase) -> None:
    for query in ("GT 750M", "GeForce GT 750M", "nvidia geforce gt750m", "GeForce GT 750M Mac Edition"):
        models = kb.gpus_by_name(query)
        assert [(m.name, m.chip, str(m.cc), m.pci_id_labels, m.ambiguous) for m in models] == [
            ("GeForce GT 750M", "GK107", "3.0", ("10de:0fe4", "10de:0fe9"), False)
        ], query
    assert kb.gpus_by_name("Tesla K80")[0].cc == CC("3.7")
    assert kb.gpus_by_name("no such gpu") == []


@pytest.mark.parametrize(
    ("name", "ccs"),
    [
        ("GT 730", ["2.1", "3.0", "3.5"]),
        ("GT 710", ["2.1", "3.5"]),
        ("GT 720", ["3.0", "3.5"]),
        ("GT 640", ["2.1", "3.0", "3.5"]),
        ("GT 740M", ["3.0", "3.5"]),
        ("GTX 860M", ["3.0", "5.0"]),
        ("GTX 750 Ti", ["3.0", "5.0"]),
        ("GT 1030", ["3.0", "6.1"]),
        ("Titan X", ["5.2", "6.1"]),
    ],
)
def test_ambiguous_names(kb: KnowledgeBase, name: str, ccs: list[str]) -> None:
    models = kb.gpus_by_name(name)
    assert sorted({str(m.cc) for m in models}) == ccs
    assert all(m.ambiguous for m in models)


def test_torch_rows(kb: KnowledgeBase) -> None:
    t171 = kb.torch("v1.7.1")
    assert t171 is not None
    assert (t171.version, t171.line, t171.python_min, t171.python_max) == ("1.7.1", "1.7", "3.6", "3.9")
    assert kb.torch("1.7.0").python_max == "3.8"  # type: ignore[union-attr]
    assert t171.torchvision == ("0.8.2",)
    assert kb.torchvision_for("1.7.0") == ("0.8.0", "0.8.1")
    assert kb.torchvision_for("1.10.2") == ("0.11.3",)
    assert kb.torchvision_for("2.5.1") == ("0.20.1",)
    assert kb.torch_for_torchvision("0.9.0") == "1.8.0"
    assert kb.torch("1.13.1").lowest_cc == CC("3.0")  # type: ignore[union-attr]
    assert kb.torch("2.0.0").lowest_cc == CC("3.5")  # type: ignore[union-attr]
    assert kb.torch("2.9.0").lowest_cc == CC("5.0")  # type: ignore[union-attr]
    assert kb.torch("1.3.0").wheels["cu101"] == CC("3.0")  # type: ignore[union-attr]
    assert kb.torch("1.3.1").wheels["cu101"] == CC("3.5")  # type: ignore[union-attr]
    assert kb.torch("2.13.0").is_unconfirmed("gcc_min")  # type: ignore[union-attr]
    assert kb.torch("0.3.1") is None


def test_cudnn_rows(kb: KnowledgeBase) -> None:
    c76 = kb.cudnn("7.6")
    assert c76 is not None
    assert sorted(c76.cuda) == ["10.0", "10.1", "10.2", "9.0", "9.2"]
    assert c76.lowest_cc_for("10.2") == CC("3.0")
    assert kb.cudnn("7.6.3").cuda == ("10.1",)  # type: ignore[union-attr]
    c84 = kb.cudnn("8.4")
    assert c84 is not None and c84.lowest_cc_for("10.2") == CC("3.0") and c84.lowest_cc_for("11.6") == CC("3.5")
    assert kb.cudnn("8.2.1").has_build_for("11.3")  # type: ignore[union-attr]
    assert not kb.cudnn("8.5").has_build_for("10.2")  # type: ignore[union-attr]
    assert kb.cudnn("9.0").lowest_cc_for("12.1") == CC("5.0")  # type: ignore[union-attr]
    assert kb.cudnn("9.0").has_build_for("11.8")  # type: ignore[union-attr]
    # NVIDIA's 9.0.0 support matrix: the CUDA 11 build of cuDNN 9.0 covers 11.0 to 11.8
    assert kb.cudnn("9.0").has_build_for("11.7")  # type: ignore[union-attr]
    assert kb.cudnn("9.4").has_build_for("11.2")  # type: ignore[union-attr]
    assert kb.cudnn("5.0") is None


def test_build_pins_old_tag(kb: KnowledgeBase) -> None:
    pins = kb.build_pins("1.7.1")
    assert pins.pip == ("cmake>=3.5,<4", "ninja>=1.5", "setuptools<=59.5.0", "numpy<2")
    assert pins.env_dict == {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}
    assert all(r.source for r in pins.reasons)


def test_build_pins_from_the_breakages_table_alone_agree_with_the_knowledge_base(kb: KnowledgeBase) -> None:
    """A cache lookup's fingerprint reads breakages.toml alone (``base.build_pins``): the same pins,
    for every torch line the tables know, with and without host tools."""
    from srcbuild.knowledge.base import build_pins

    lines = [r.line for r in kb.torch_releases]
    assert len(lines) > 10
    for line in lines:
        for version in (line, f"{line}.0", f"{line}.1"):
            for tools in (None, {"cmake": "3.31.6"}, {"cmake": "4.0.2"}):
                assert build_pins(version, tools) == kb.build_pins(version, tools), (version, tools)


def test_build_pins_follow_host_tools(kb: KnowledgeBase) -> None:
    assert kb.build_pins("2.5.1", {"cmake": "3.31.6"}).env == ()
    assert kb.build_pins("2.5.1", {"cmake": "4.0.2"}).env_dict == {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}
    pins = kb.build_pins("2.5.1", {"cmake": "3.31.6"})
    assert pins.pip == ("cmake>=3.18,<4", "ninja>=1.5", "setuptools<80")
    assert kb.build_pins("2.11.0").pip == ("cmake>=3.27", "ninja>=1.5")
    assert kb.build_pins("2.2.2").pip == ("cmake>=3.18,<4", "ninja>=1.5", "setuptools<80", "numpy<2")
    assert kb.build_pins("2.5.1").to_json()["env"] == {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}


def test_arch_rows_agree_with_the_cuda_rows(kb: KnowledgeBase) -> None:
    """Each [[arch]] row and the [[cuda]] rows' min_cc/max_cc tell the same story for the releases known."""
    known_first = kb.cuda_releases[0].line
    for support in kb.arch_support:
        window = [r.line for r in kb.cuda_window(support.cc)]
        assert window, support
        expected_first = max(support.cuda_min, known_first, key=lambda v: tuple(map(int, v.split("."))))
        assert window[0] == expected_first, support
        assert window[-1] == (support.cuda_max or kb.cuda_releases[-1].line), support
        # no gaps: every release between the first and the last targets it
        lines = [r.line for r in kb.cuda_releases]
        assert window == lines[lines.index(window[0]) : lines.index(window[-1]) + 1]


def test_short_source_names_are_expanded(kb: KnowledgeBase) -> None:
    short = ("spack-cuda", "llvm-nvptx", "torch-gcc", "nv-drivers", "nv-minor", "nv-matrix", "spack-torch", "spack-tv")
    short += ("release-md", "tv-readme", "spack-cudnn", "nv-cudnn-760", "nv-cudnn-850", "nv-cudnn-900")
    rows = (*kb.cuda_releases, *kb.driver_branches, *kb.driver_limits, *kb.torch_releases, *kb.cudnn_releases)
    for row in rows:
        for name in short:
            assert not re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", row.source), (name, row.source)
    assert kb.cuda("10.2").source.startswith("spack/spack-packages:repos/spack_repo/builtin/build_systems/cuda.py")  # type: ignore[union-attr]


def test_package_build_pins(kb: KnowledgeBase) -> None:
    assert kb.package_build_pins("torchvision", "0.8.2").pip == ("setuptools<77", "numpy<2")
    assert kb.package_build_pins("torchvision", "0.20.1").pip == ("setuptools<77",)
    assert kb.package_build_pins("torchvision", "0.26.0").pip == ()  # pillow is a run-time dependency, not a build tool
    assert kb.build_pins("2.11.0").pip == ("cmake>=3.27", "ninja>=1.5")  # torchvision rows stay out


def test_torchvision_runtime_pins(kb: KnowledgeBase) -> None:
    """pillow 10 breaks torchvision <= 0.12 and pillow 8.3 every release: pins for wherever the wheel
    is installed, the same from the whole knowledge base and from breakages.toml alone."""
    from srcbuild.knowledge.base import runtime_pins

    assert kb.runtime_pins("torchvision", "0.8.2") == ("pillow<10,!=8.3.*",)
    assert kb.runtime_pins("torchvision", "0.12.0+cu113.sm61") == ("pillow<10,!=8.3.*",)  # a local label
    assert kb.runtime_pins("torchvision", "0.13.1") == ("pillow!=8.3.*",)
    assert kb.runtime_pins("torch", "1.7.1") == ()
    for version in ("0.8.2", "0.12.0", "0.13.0", "0.29.2"):
        assert runtime_pins("torchvision", version) == kb.runtime_pins("torchvision", version)


def test_gpus_by_name_without_the_product_line(kb: KnowledgeBase) -> None:
    assert [(m.name, str(m.cc)) for m in kb.gpus_by_name("K80")] == [("Tesla K80", "3.7")]
    k40 = kb.gpus_by_name("K40")
    assert {m.cc for m in k40} == {CC("3.5")} and "Tesla K40m" in {m.name for m in k40}
    assert {m.name for m in kb.gpus_by_name("K4000")} == {"Quadro K4000", "Quadro K4000M"}
    titan_x = kb.gpus_by_name("Titan X")
    assert {str(m.cc) for m in titan_x} == {"5.2", "6.1"} and all(m.ambiguous for m in titan_x)


def test_breakage_rows_are_well_formed(kb: KnowledgeBase) -> None:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    ids = [b.id for b in kb.breakages]
    assert len(ids) == len(set(ids))
    for b in kb.breakages:
        for spec in (b.torch, b.when_gcc, b.when_cuda, b.when_python, b.when_cudnn):
            if spec is not None:
                SpecifierSet(spec)  # raises on a typo
        assert b.action in ("pin", "env", "patch", "toolchain")
        if b.action == "env":
            assert "=" in b.value
        for setting in b.resolved_by_env:
            assert "=" in setting
        assert b.fix.endswith(".") is False, b.id  # the rule adds the full stop
    for floor in kb.tool_floors:
        SpecifierSet(floor.release)
        Requirement(floor.requirement)  # pip gets it as written (build environment or install)
        assert floor.stage in ("build", "run") and floor.project in ("torch", "torchvision"), floor


def test_cuda_targets_are_sets_read_from_ptxas(kb: KnowledgeBase) -> None:
    """Each CUDA row holds the set its ptxas accepts, not a span: holes and renames are kept."""
    def has(cuda: str, cc: str) -> bool:
        return kb.cuda(cuda).accepts_cc(CC(cc))  # type: ignore[union-attr]

    assert has("12.8", "10.0") and has("12.8", "10.1") and has("12.8", "12.0")
    assert not has("12.8", "10.3") and not has("12.8", "11.0") and not has("12.8", "12.1")
    assert has("12.9", "10.3") and has("12.9", "12.1") and not has("12.9", "11.0")
    assert has("13.0", "11.0") and not has("13.0", "10.1")  # sm_101 renamed sm_110
    assert has("11.8", "9.0") and has("11.8", "3.7") and not has("11.7", "8.9")
    assert "90a" in kb.cuda("12.0").targets.sass and "100f" not in kb.cuda("12.8").targets.sass  # type: ignore[union-attr]
    # 11.7 and later: read from NVIDIA's nvcc wheels; older releases: Spack's cuda.py, cited by commit
    for release in kb.cuda_releases:
        source = release.targets.source
        if versions.parse(release.line) >= (11, 7):
            assert re.match(r"binary: nvidia_cuda_nvcc\S*\.whl sha256:[0-9a-f]{64} ", source), release.line
        else:
            assert "cuda.py at commit 1d335f8b9b4c0acfaefbe75e3a22f5fbf0ae0963" in source, release.line
        assert (release.min_cc, release.max_cc) == (release.targets.capabilities[0], release.targets.capabilities[-1])
