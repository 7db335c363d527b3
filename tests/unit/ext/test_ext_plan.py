"""The extension plan: made from the recipe's resolved torch build, pure, and what it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.errors import RecipeError
from srcbuild.ext.knowledge import knowledge_for
from srcbuild.ext.plan import FETCH_REF, make_ext_plan
from srcbuild.ext.resolve import ExtBuild, TorchChoice, ext_variables
from srcbuild.ext.source import Sdist, parse_requirement
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.plan.render import render
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildHost, BuildOptions, resolve

SHA = "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47"
RECIPE = """name = "k80"
[torch]
tag = "v2.0.1"
[toolchain]
python = "3.11"
gcc = "11"
cuda = "11.8"
[gpu]
arch = ["3.5", "3.7"]
[build]
env = { USE_NCCL = "0" }
"""


def _build(
    tmp_path: Path, requirement: str = "torch-scatter==2.1.2", recipe_text: str = RECIPE, memory_jobs: int | None = 7
) -> ExtBuild:
    (tmp_path / "k80.toml").write_text(recipe_text)
    paths = Paths.resolve(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", environ={})
    recipe = RecipeCatalog(paths).load(str(tmp_path / "k80.toml"))
    host = BuildHost(
        gcc=Path("/usr/bin/gcc-11"), gxx=Path("/usr/bin/g++-11"), cuda_home=Path("/opt/cuda-11.8"),
        cuda_home_source="host probe", python=Path("/usr/bin/python3.11"), max_jobs=2,
        max_jobs_reason="2 cores", update_alternatives="update-alternatives", platform="linux_x86_64",
    )
    base = resolve(recipe, BuildOptions(package="torch"), host, load_knowledge(), paths=paths, environ={})
    request = parse_requirement(requirement)
    knowledge = knowledge_for(request.name)
    sdist = None if request.is_git else Sdist(
        "torch-scatter", "2.1.2", "torch_scatter-2.1.2.tar.gz", "https://files.example.org/torch_scatter-2.1.2.tar.gz",
        SHA,
    )
    torch = TorchChoice("wheel", "2.0.1", tmp_path / "torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl", "wheel t.whl")
    env = ext_variables(base, knowledge, memory_jobs)
    return ExtBuild(base, request, knowledge, torch, sdist, env, knowledge.options(True), paths.builds_dir / "k80-ext",
                    "ab" * 32)


def test_the_steps_and_the_build_command(tmp_path: Path) -> None:
    b = _build(tmp_path)
    plan = make_ext_plan(b)
    assert plan.step_ids == (
        "preflight", "compiler", "environment", "install-torch", "source", "parallel", "constraints", "build",
        "verify", "cache",
    )
    install = plan.step("install-torch").commands[0].argv
    assert install[-2:] == ("--no-index", str(b.torch.wheel))
    (build,) = plan.step("build").commands
    assert build.argv[1:8] == ("-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "--no-cache-dir")
    assert ("-c", str(b.constraints)) == build.argv[8:10]
    # its setup.py turns ninja off: the sdist is unpacked and edited (extensions.toml's parallel row)
    assert build.argv[-1] == str(b.source_dir / "torch_scatter-2.1.2")
    unpack = plan.step("parallel").commands[0].argv
    edit = b.knowledge.parallel
    assert edit is not None
    assert unpack[3:] == (str(b.root / "torch_scatter-2.1.2.tar.gz"), SHA, str(b.source_dir), "torch_scatter-2.1.2",
                          "setup.py", "use_ninja=False", "use_ninja=True", str(edit.prepend_path),
                          edit.prepend_sha256())
    assert unpack[-2].endswith("build_ext_at_once.py.in") and len(unpack[-1]) == 64  # the extensions side by side
    constraints = plan.step("constraints").commands[0].argv
    assert constraints[-1] == "torch==2.0.1"
    fetch = plan.step("source").commands[0].argv
    assert fetch[-3:] == ("https://files.example.org/torch_scatter-2.1.2.tar.gz", SHA,
                          str(b.root / "torch_scatter-2.1.2.tar.gz"))


def test_installing_the_torch_wheel_is_recorded_and_skipped_when_the_environment_holds_it(tmp_path: Path) -> None:
    from srcbuild.ext.actions import TorchWheelInstalled
    from srcbuild.ext.handlers import torch_wheel_installed

    b = _build(tmp_path)
    step = make_ext_plan(b).step("install-torch")
    assert step.commands[-1].argv[-2:] == (str(b.torch_marker), "ab" * 32)
    assert b.torch_marker.parent == b.python.parent.parent  # the environment's, shared by its builds
    condition = step.skip_if
    assert isinstance(condition, TorchWheelInstalled) and condition.sha256 == "ab" * 32
    assert condition.version == "2.0.1"

    from types import SimpleNamespace

    ex = SimpleNamespace(environ={})
    missing = TorchWheelInstalled(tmp_path / "py", tmp_path / "marker", "ab" * 32, "2.0.1")
    assert torch_wheel_installed(ex, missing) is False  # type: ignore[arg-type]  # no marker: install
    (tmp_path / "marker").write_text("cd" * 32 + "\n")
    assert torch_wheel_installed(ex, missing) is False  # type: ignore[arg-type]  # another wheel: install
    no_sha = ExtBuild(b.base, b.request, b.knowledge, b.torch, b.sdist, b.env_changes, b.options, b.root)
    assert make_ext_plan(no_sha).step("install-torch").skip_if is None


def test_the_variables_are_the_recipes_compiler_cuda_and_archs_plus_the_packages(tmp_path: Path) -> None:
    final = _build(tmp_path).env_changes.final_values()
    assert final["TORCH_CUDA_ARCH_LIST"] == "3.5;3.7"
    assert final["FORCE_CUDA"] == "1"
    assert final["MAX_JOBS"] == "2"
    assert final["CUDA_HOME"] == "/opt/cuda-11.8"
    assert final["USE_NCCL"] == "0"  # the recipe's [build] env
    assert final["CUDAHOSTCXX"].endswith("/g++") and final["CC"].endswith("/gcc")
    # torch's own build variables stay with torch
    assert not {"USE_CUDNN", "BUILD_TEST", "PYTORCH_BUILD_VERSION", "USE_MPI"} & set(final)


def test_nvcc_compiles_the_archs_of_a_file_at_once_through_the_packages_own_flags_variable(tmp_path: Path) -> None:
    b = _build(tmp_path)
    assert b.env_changes.final_values()["NVCC_FLAGS"] == "--threads 2"  # 2 archs, MAX_JOBS=2
    (change,) = [c for c in b.env_changes.changes if c.name == "NVCC_FLAGS"]
    assert "torch_scatter-2.1.2.tar.gz" in change.origin and "setup.py lines 70-80" in change.origin
    # the build command's variables carry it (and so the cache key)
    (build,) = make_ext_plan(b).step("build").commands
    assert build.env is not None and build.env.final_values()["NVCC_FLAGS"] == "--threads 2"
    (tmp_path / "sparse").mkdir()
    other = _build(tmp_path / "sparse", "torch-sparse==0.6.18").env_changes.final_values()
    assert other["NVCC_FLAGS"] == "--threads 2"  # torch-sparse keeps ninja, and reads NVCC_FLAGS the same way
    (tmp_path / "generic").mkdir()
    assert "NVCC_FLAGS" not in _build(tmp_path / "generic", "mmcv==2.1.0").env_changes.final_values()


@pytest.mark.parametrize(
    ("change", "flags", "why"),
    [
        (('arch = ["3.5", "3.7"]', 'arch = ["3.7"]'), None, "one arch: nothing to compile at once"),
        (('cuda = "11.8"', 'cuda = "10.2"'), None, "nvcc before 11.2 has no --threads"),
        (('env = { USE_NCCL = "0" }', 'env = { NVCC_FLAGS = "-lineinfo" }\nallow_env_override = true'),
         "-lineinfo", "the recipe's own flags win"),
    ],
)
def test_no_nvcc_threads_where_they_cannot_apply(
    tmp_path: Path, change: tuple[str, str], flags: str | None, why: str
) -> None:
    final = _build(tmp_path, recipe_text=RECIPE.replace(*change)).env_changes.final_values()
    assert final.get("NVCC_FLAGS") == flags, why


@pytest.mark.parametrize(("memory_jobs", "flags"), [(7, "--threads 2"), (4, "--threads 2"), (3, None), (None, None)])
def test_nvcc_threads_stay_within_the_jobs_memory_allows(
    tmp_path: Path, memory_jobs: int | None, flags: str | None
) -> None:
    """MAX_JOBS=2 files at once, each with N device compilers: 2 x N within what memory allows (unknown: none)."""
    final = _build(tmp_path, memory_jobs=memory_jobs).env_changes.final_values()
    assert final.get("NVCC_FLAGS") == flags


def test_a_cpu_recipe_builds_without_cuda(tmp_path: Path) -> None:
    cpu = RECIPE.replace('cuda = "11.8"', 'cuda = "none"').replace('[gpu]\narch = ["3.5", "3.7"]\n', "")
    b = _build(tmp_path, recipe_text=cpu)
    final = b.env_changes.final_values()
    assert final["FORCE_ONLY_CPU"] == "1"
    assert not {"FORCE_CUDA", "TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "NVCC_FLAGS"} & set(final)
    verify = make_ext_plan(b).step("verify").action
    assert verify is not None and "a CPU build" in verify.describe()


def test_a_git_source_is_fetched_at_its_ref(tmp_path: Path) -> None:
    b = _build(tmp_path, "git+https://example.org/rusty1s/pytorch_scatter.git@2.1.2")
    commands = [c.argv for c in make_ext_plan(b).step("source").commands]
    fetch = commands[3]
    assert fetch[:4] == ("sh", "-c", FETCH_REF, "+refs/tags/2.1.2:refs/tags/2.1.2")
    assert fetch[-4:] == ("-C", str(b.source_dir), "fetch", "--no-tags")
    assert commands[4][-2:] == ("--detach", "refs/tags/2.1.2")
    assert commands[5][-4:] == ("submodule", "update", "--init", "--recursive")
    assert make_ext_plan(b).step("build").commands[0].argv[-1] == str(b.source_dir)


def test_the_shell_plan_runs_the_same_commands(tmp_path: Path) -> None:
    b = _build(tmp_path)
    script = render(make_ext_plan(b), "shell")
    assert "--no-build-isolation" in script and "export TORCH_CUDA_ARCH_LIST='3.5;3.7'" in script
    assert "export FORCE_CUDA=1" in script


def test_recipes_list_extensions(tmp_path: Path) -> None:
    text = RECIPE + '\n[[extensions]]\nname = "torch-scatter"\nversion = "2.1.2"\n\n[[extensions]]\nname = "mmcv"\n' \
        '\n[[extensions]]\nname = "apex"\ngit = "https://example.org/NVIDIA/apex.git@23.08"\n'
    recipe = _build(tmp_path, recipe_text=text).recipe
    assert [e.requirement for e in recipe.extensions] == [
        "torch-scatter==2.1.2", "mmcv", "git+https://example.org/NVIDIA/apex.git@23.08"
    ]
    assert recipe.to_json()["extensions"][0] == {"name": "torch-scatter", "version": "2.1.2"}


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('versoin = "1"', "extensions[0]: 'versoin': unknown key (did you mean 'version'?)"),
        ('version = "2.1.2"', "extensions[0]: name: required key is missing"),
        ('name = "x"\nversion = 2', "version = 2 must be a string"),
        ('name = "x"\nversion = "1"\ngit = "https://h/x.git@v1"', "version and git name two sources"),
        ('name = "x"\ngit = "https://h/x.git"', "is not URL@TAG or URL@COMMIT"),
    ],
)
def test_a_bad_extension_table_names_the_key(tmp_path: Path, table: str, words: str) -> None:
    with pytest.raises(RecipeError) as info:
        _build(tmp_path, recipe_text=RECIPE + f"\n[[extensions]]\n{table}\n")
    assert words in info.value.message and "k80.toml: extensions[0]" in info.value.message


def test_a_git_source_goes_through_the_mirror_rules_with_its_submodules(tmp_path: Path) -> None:
    from dataclasses import replace

    from srcbuild.sources.mirrors import parse_mirror_args

    commit = "0123456789abcdef0123456789abcdef01234567"
    b = _build(tmp_path, f"git+https://github.com/rusty1s/pytorch_scatter@{commit}")
    rules = parse_mirror_args(["https://github.com/=/srv/m/git/github.com/"], {})
    b = replace(b, base=replace(b.base, mirrors=rules))
    step = make_ext_plan(b).step("source")
    fetch, checkout, submodules = (c.argv for c in step.commands[3:])
    assert fetch[3] == commit and "url./srv/m/git/github.com/.insteadOf=https://github.com/" in fetch
    assert checkout[-1] == commit
    assert "url./srv/m/git/github.com/.insteadOf=https://github.com/" in submodules
    assert "from /srv/m/git/github.com/rusty1s/pytorch_scatter" in step.commands[3].why


def test_a_torch_from_the_index_is_the_fetch_torch_step_before_the_preflight(tmp_path: Path) -> None:
    from dataclasses import replace

    from srcbuild.ext.actions import FetchTorchWheel

    b = _build(tmp_path)
    name = "torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl"
    fetch = FetchTorchWheel("2.0.1", "3.11", name, f"https://files.example.org/{name}", "cd" * 32,
                            tmp_path / "work" / "torch-wheels")
    b = replace(b, torch=TorchChoice("index", "2.0.1", fetch.wheel, f"the package index ({fetch.url})"),
                torch_sha256=fetch.sha256, fetch=fetch)
    plan = make_ext_plan(b)
    assert plan.step_ids[:2] == ("fetch-torch", "preflight")
    assert plan.step("fetch-torch").action == fetch
    assert plan.step("install-torch").commands[0].argv[-1] == str(fetch.wheel)
    text = render(plan, "text", 80)
    assert f"Fetch {name}" in text
    assert "sha256" + "cd" * 32 in "".join(text.split())  # a long word may wrap; none is cut
    assert make_ext_plan(replace(b, fetch=None)).step_ids[0] == "preflight"
