"""The extension preflight: torch, nvcc and the recipe must agree before anything compiles."""

from __future__ import annotations

from srcbuild.capability import ComputeCapability
from srcbuild.errors import IncompatibleError
from srcbuild.ext.key import ExtKeyInputs, ext_fingerprint, without_nvcc_threads
from srcbuild.ext.knowledge import knowledge_for
from srcbuild.ext.preflight import ext_findings, range_findings, refusal
from srcbuild.ext.torch import TorchIdentity
from srcbuild.findings import Severity
from srcbuild.knowledge import load_knowledge
from srcbuild.verify.kernels import Kernels

CC = ComputeCapability.parse
CU117 = TorchIdentity("2.0.1", "11.7", Kernels(frozenset({37, 50, 60, 70, 75, 80, 86})), "sha256:aa", "wheel t.whl")
CPU = TorchIdentity("2.13.0+cpu", None, Kernels(), "sha256:bb", "index torch==2.13.0+cpu")
NVCC_118 = load_knowledge().cuda("11.8").targets.capabilities  # type: ignore[union-attr]


def rules(findings: tuple) -> dict[str, Severity]:
    return {f.rule: f.severity for f in findings}


def test_matching_majors_and_covered_archs_pass_with_a_minor_warning() -> None:
    found = ext_findings("k80", "11.8", [CC("3.7")], CU117, "11.8", NVCC_118)
    assert rules(found) == {"ext-cuda-minor": Severity.WARNING}
    assert refusal(found) is None


def test_an_arch_torch_has_no_kernels_for_is_a_warning_naming_it() -> None:
    found = ext_findings("k80", "11.8", [CC("3.5"), CC("3.7")], CU117, "11.7", NVCC_118)
    assert rules(found) == {"ext-torch-kernels": Severity.WARNING}
    (finding,) = found
    assert "compute capability 3.5" in finding.message and "3.7, 5.0" in finding.message


def test_a_different_cuda_major_is_refused_like_cpp_extension_does() -> None:
    nvcc_121 = load_knowledge().cuda("12.1").targets.capabilities  # type: ignore[union-attr]
    found = ext_findings("k80", "12.1", [CC("3.7")], CU117, "12.1", nvcc_121)
    assert rules(found) == {"ext-cuda-major": Severity.ERROR, "ext-nvcc-arch": Severity.ERROR}
    err = refusal(found)
    assert isinstance(err, IncompatibleError) and err.exit_code == 3
    assert "nvcc is CUDA 12.1 and torch 2.0.1 was built with CUDA 11.7" in err.message
    assert "(and 1 more above)" in err.message
    assert err.hint and "--ignore-preflight" in err.hint
    assert refusal(found, ignore=True) is None


def test_a_cpu_torch_with_a_cuda_recipe_names_both() -> None:
    found = ext_findings("k80", "11.8", [CC("3.7")], CPU, "11.8", NVCC_118)
    assert rules(found) == {"ext-cpu-torch": Severity.ERROR}
    assert "recipe k80 builds CUDA 11.8 kernels for 3.7" in found[0].message
    assert "torch 2.13.0+cpu (CPU-only" in found[0].message


def test_a_cpu_recipe_with_a_cuda_torch_warns() -> None:
    assert rules(ext_findings("cpu", None, [], CU117, None, None)) == {"ext-cpu-recipe-cuda-torch": Severity.WARNING}
    assert ext_findings("cpu", None, [], CPU, None, None) == ()


def test_a_torch_outside_the_range_upstream_states_is_refused_naming_both() -> None:
    old = TorchIdentity("1.3.1", "10.1", Kernels(frozenset({37})), "sha256:cc", "wheel t.whl")
    (finding,) = range_findings(knowledge_for("torch-scatter"), "2.1.2", old.version)
    assert (finding.rule, finding.severity) == ("ext-torch-range", Severity.ERROR)
    assert finding.message == "torch-scatter 2.1.2 supports torch >=1.4.0, and torch 1.3.1 is outside that range"
    assert "README.md" in finding.source and "at least PyTorch 1.4.0" in finding.source
    err = refusal((finding,))
    assert isinstance(err, IncompatibleError) and err.exit_code == 3
    (audio,) = range_findings(knowledge_for("torchaudio"), "2.0.2", CPU.version)
    assert audio.severity is Severity.ERROR
    assert "torchaudio 2.0.2 supports torch ==2.0.1, and torch 2.13.0+cpu is outside" in audio.message


def test_a_torch_inside_the_range_passes_and_a_local_label_does_not_count() -> None:
    (finding,) = range_findings(knowledge_for("torch-scatter"), "2.1.2", CPU.version)
    assert finding.severity is Severity.INFO
    cu117 = TorchIdentity("2.0.1+cu117", "11.7", Kernels(), "sha256:aa", "wheel t.whl")
    assert range_findings(knowledge_for("torchaudio"), "2.0.2", cu117.version)[0].severity is Severity.INFO


def test_an_unstated_range_is_a_warning() -> None:
    for knowledge, release in ((knowledge_for("torch-scatter"), "2.0.9"), (knowledge_for("my-ext"), "1.0"),
                               (knowledge_for("torch-scatter"), None)):
        (finding,) = range_findings(knowledge, release, CU117.version)
        assert (finding.rule, finding.severity) == ("ext-torch-range-unknown", Severity.WARNING)
        assert "srcbuild knows no torch range upstream states for" in finding.message
    (git,) = range_findings(knowledge_for("x"), None, CU117.version)
    assert "a git source: its release is not known" in git.message


def test_the_official_k80_torch_with_the_k80_recipe_builds_warning_only_about_35() -> None:
    # torch 2.7.1+cu118: CUDA 11.8, SASS from sm_37 (srcbuild/knowledge/data/torch.toml: official_wheels cu118 = 3.7)
    k80 = TorchIdentity("2.7.1+cu118", "11.8", Kernels(frozenset({37, 50, 60, 70, 75, 80, 86, 90})), "record-sha256:dd",
                        "environment /home/u/venvs/k80")
    found = ext_findings("kepler-k80-cu118", "11.8", [CC("3.5"), CC("3.7")], k80, "11.8", NVCC_118)
    assert rules(found) == {"ext-torch-kernels": Severity.WARNING}
    assert "compute capability 3.5" in found[0].message and refusal(found) is None
    assert ext_findings("k80-only", "11.8", [CC("3.7")], k80, "11.8.89", NVCC_118) == ()
    assert range_findings(knowledge_for("torch-scatter"), "2.1.2", k80.version)[0].severity is Severity.INFO


def _inputs(**changes: object) -> ExtKeyInputs:
    base: dict[str, object] = dict(
        name="torch-scatter", source={"sdist": "torch_scatter-2.1.2.tar.gz", "sha256": "cc"}, against="sha256:aa",
        torch="2.0.1", torch_cuda="11.7",
        build_env={"FORCE_CUDA": "1", "MMCV_WITH_OPS": "1", "MAX_JOBS": "2", "CUDA_HOME": "/opt/cuda"},
        options=(), python_abi="cp311", gcc="11", cuda="11.8", platform="linux_x86_64",
    )
    base.update(changes)
    return ExtKeyInputs.create(**base)  # type: ignore[arg-type]


def test_the_key_counts_the_torch_the_source_and_the_variables_not_speed_or_paths() -> None:
    fp = ext_fingerprint(_inputs())
    # FORCE_CUDA follows the recipe's CUDA (hashed as "cuda"); a path or MAX_JOBS changes no binary
    assert _inputs().to_json()["build_env"] == {"MMCV_WITH_OPS": "1"}
    assert (_inputs().to_json()["package"], _inputs().to_json()["kind"]) == ("torch-scatter", "extension")
    assert ext_fingerprint(_inputs(build_env={"MMCV_WITH_OPS": "1", "MAX_JOBS": "16"})) == fp
    for change in (
        {"against": "sha256:dd"},
        {"source": {"sdist": "torch_scatter-2.1.2.tar.gz", "sha256": "ee"}},
        {"build_env": {"MMCV_WITH_OPS": "1", "WITH_METIS": "1"}},
        {"gcc": "10"},
        {"cuda": "11.7"},
        {"options": ("--cpp_ext",)},
    ):
        assert ext_fingerprint(_inputs(**change)) != fp, change


def test_a_version_label_decides_the_cuda_checks_before_the_wheel_is_read() -> None:
    from srcbuild.ext.preflight import label_cuda, label_findings

    assert (label_cuda("2.0.1+cu117"), label_cuda("2.14.1+cu130"), label_cuda("1.7.1+cu92")) == ("11.7", "13.0", "9.2")
    assert label_cuda("2.13.0+cpu") is None
    assert label_cuda("2.0.1") is False and label_cuda("2.0.1+rocm5.4.2") is False
    archs = [ComputeCapability.parse("3.7")]
    (cpu,) = label_findings("k80", "11.8", archs, "2.13.0+cpu", "11.8.89")
    assert (cpu.rule, cpu.severity) == ("ext-cpu-torch", Severity.ERROR)
    assert cpu.message.startswith("recipe k80 builds CUDA 11.8 kernels for 3.7, but torch 2.13.0+cpu (by its +cpu "
                                  "label) is CPU-only")
    (major,) = label_findings("k80", "11.8", archs, "2.14.1+cu130", "11.8.89")
    assert major.message == ("nvcc is CUDA 11.8.89 and torch 2.14.1+cu130 was built with CUDA 13.0: "
                             "torch.utils.cpp_extension refuses a different CUDA major version")
    assert label_findings("k80", "11.8", archs, "2.0.1", "11.8.89") == ()  # PyPI's: read from the wheel
    (minor,) = label_findings("k80", "11.8", archs, "2.0.1+cu117", "11.8.89")
    assert minor.severity is Severity.WARNING


def test_nvcc_threads_change_no_key_and_other_nvcc_flags_do() -> None:
    """--threads N follows the machine's memory and changes only speed: a lab's machines share the key."""
    plain = ext_fingerprint(_inputs(nvcc_flags_variable="NVCC_FLAGS"))
    for flags in ("--threads 2", "--threads=4", "  --threads 3  "):
        env = {"MMCV_WITH_OPS": "1", "NVCC_FLAGS": flags}
        assert ext_fingerprint(_inputs(build_env=env, nvcc_flags_variable="NVCC_FLAGS")) == plain, flags
    lineinfo = {"MMCV_WITH_OPS": "1", "NVCC_FLAGS": "-lineinfo --threads 2"}
    keyed = _inputs(build_env=lineinfo, nvcc_flags_variable="NVCC_FLAGS")
    assert keyed.to_json()["build_env"] == {"MMCV_WITH_OPS": "1", "NVCC_FLAGS": "-lineinfo"}
    assert ext_fingerprint(keyed) != plain
    # only the package's own nvcc-flags variable is read so; elsewhere the text is kept as it is
    assert _inputs(build_env={"NVCC_FLAGS": "--threads 2"}).to_json()["build_env"] == {"NVCC_FLAGS": "--threads 2"}
    assert without_nvcc_threads({"X": "--threads-extra 2 --threads 2x"}, "X") == {"X": "--threads-extra 2 --threads 2x"}
