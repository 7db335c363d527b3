"""Portable builds in the resolve stage: where "portable" comes from, which compiler it takes (the
conda gcc with its sysroot, never a distribution's gcc), the fingerprint, and the planned steps."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from srcbuild.errors import HostError, UsageError
from srcbuild.findings import Severity
from srcbuild.host.facts import CudaToolkit, GccInstall, HostFacts
from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.plan import make_plan
from srcbuild.plan.render import render_shell
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.resolve import BuildHost, BuildOptions, ResolvedBuild, refusal, resolve
from srcbuild.resolve.decide import portable_choice
from srcbuild.resolve.inputs import SysrootGcc
from srcbuild.resolve.key import build_fingerprint, key_inputs
from srcbuild.resolve.portable import sysroot_gcc, sysroot_glibc
from srcbuild.resolve.resolver import resolve_unprobed
from srcbuild.toolchain.needs import Need
from srcbuild.toolchain.providers.base import Offer, Request

RECIPE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world" / "world-kepler-cu118.toml"
HOST_GCC = GccInstall(11, "11.3.0", Path("/usr/bin/gcc-11"), Path("/usr/bin/g++-11"))


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.resolve(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache", environ={})


@pytest.fixture
def recipe(paths: Paths) -> Recipe:
    return RecipeCatalog(paths).load(str(RECIPE))


def _with_portable(recipe: Recipe, value: bool | None) -> Recipe:
    return dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, portable=value))


def _resolve(recipe: Recipe, paths: Paths, host: BuildHost, portable: bool | None = True) -> ResolvedBuild:
    options = BuildOptions(portable=portable)
    return resolve(recipe, options, host, load_knowledge(), paths=paths, environ={})


def _conda_gcc(prefix: Path, status: str = "provisioned") -> SysrootGcc:
    return SysrootGcc(
        "2.17",
        prefix / "bin" / "gcc-11",
        prefix / "bin" / "g++-11",
        "11.4.0",
        prefix / "x86_64-conda-linux-gnu" / "sysroot",
        status,
    )


def test_portable_comes_from_default_recipe_environment_then_command_line(recipe: Recipe) -> None:
    assert portable_choice(recipe, BuildOptions(), {}) == portable_choice(recipe, BuildOptions(), {})
    assert not portable_choice(recipe, BuildOptions(), {}).value
    assert portable_choice(recipe, BuildOptions(), {}).origin == "default"
    on = _with_portable(recipe, True)
    assert portable_choice(on, BuildOptions(), {}).origin == "recipe world-kepler-cu118.toml [build.portable]"
    off_by_env = portable_choice(on, BuildOptions(), {"SRCBUILD_PORTABLE": "0"})
    assert (off_by_env.value, off_by_env.origin) == (False, "environment SRCBUILD_PORTABLE")
    by_cli = portable_choice(on, BuildOptions(portable=True), {"SRCBUILD_PORTABLE": "0"})
    assert (by_cli.value, by_cli.origin) == (True, "command line --portable")
    not_cli = portable_choice(on, BuildOptions(portable=False), {})
    assert (not_cli.value, not_cli.origin) == (False, "command line --no-portable")
    with pytest.raises(UsageError, match="SRCBUILD_PORTABLE='maybe' is not a yes/no value"):
        portable_choice(recipe, BuildOptions(), {"SRCBUILD_PORTABLE": "maybe"})


def test_the_sysroot_glibc_is_data() -> None:
    assert sysroot_glibc({}) == "2.17"


def test_a_portable_build_compiles_with_the_conda_gcc_and_its_sysroot(
    recipe: Recipe, paths: Paths, tmp_path: Path
) -> None:
    prefix = tmp_path / "toolchains" / "gcc-11-sysroot2.17-conda"
    host = BuildHost(
        gcc=HOST_GCC.path,
        gxx=HOST_GCC.gxx,
        gcc_version="11.3.0",
        facts=HostFacts(gccs=(HOST_GCC,)),
        sysroot_gcc=_conda_gcc(prefix),
        host_python_path="/opt/srcbuild/bin/python",
    )
    resolved = _resolve(recipe, paths, host)
    assert (resolved.compiler.gcc, resolved.compiler.gxx) == (prefix / "bin" / "gcc-11", prefix / "bin" / "g++-11")
    assert resolved.compiler.tree.links_dir == paths.work_dir / "compilers" / "gcc-11-sysroot2.17" / "bin"
    assert not [f for f in resolved.findings if f.rule == "portable-compiler"]
    sysroot = resolved.toolchain("sysroot")
    assert (sysroot.pinned, sysroot.path) == ("2.17", prefix / "x86_64-conda-linux-gnu" / "sysroot")
    assert resolved.toolchain("gcc").source == "provisioned: gcc_linux-64 + sysroot_linux-64 2.17 (portable)"
    setting = next(s for s in resolved.settings if s.name == "portable")
    assert (setting.value, setting.source) == (
        "yes (conda gcc + glibc sysroot, manylinux tag)",
        "command line --portable",
    )
    assert resolved.portable is not None and resolved.portable.glibc == "2.17"

    plain = _resolve(recipe, paths, dataclasses.replace(host, sysroot_gcc=None), portable=None)
    assert plain.portable is None and plain.compiler.gcc == HOST_GCC.path
    assert key_inputs(resolved).to_json()["sysroot"] == "2.17"
    assert "sysroot" not in key_inputs(plain).to_json()  # non-portable fingerprints did not change
    assert build_fingerprint(resolved) != build_fingerprint(plain)


def test_an_unprobed_lookup_of_a_portable_recipe_has_the_portable_key(recipe: Recipe, paths: Paths) -> None:
    portable = _with_portable(recipe, True)
    built = _resolve(portable, paths, BuildHost(sysroot_gcc=_conda_gcc(Path("/tc/gcc"))), portable=None)
    assert build_fingerprint(built) == build_fingerprint(resolve_unprobed(portable, "torch", built.platform))
    assert build_fingerprint(built) != build_fingerprint(resolve_unprobed(recipe, "torch", built.platform))


def test_the_host_gcc_is_refused_for_a_portable_build(recipe: Recipe, paths: Paths) -> None:
    cuda = CudaToolkit("11.8.89", Path("/opt/cuda-11.8"), Path("/opt/cuda-11.8/bin/nvcc"), "CUDA_HOME")
    host = BuildHost(
        gcc=HOST_GCC.path,
        gxx=HOST_GCC.gxx,
        facts=HostFacts(gccs=(HOST_GCC,), cuda_toolkits=(cuda,)),
        sysroot_gcc=SysrootGcc("2.17", None, why="--no-provision: nothing is fetched"),
    )
    resolved = _resolve(recipe, paths, host)
    [finding] = [f for f in resolved.findings if f.rule == "portable-compiler"]
    assert finding.severity is Severity.ERROR
    assert finding.message == (
        "a portable build needs conda-forge's gcc_linux-64 11 with sysroot_linux-64 2.17; the host's "
        "/usr/bin/gcc-11 links this machine's glibc and is not used (--no-provision: nothing is fetched)"
    )
    assert finding.fix == "srcbuild toolchain install gcc 11 --from conda --sysroot 2.17"
    assert resolved.compiler.gcc != HOST_GCC.path
    assert resolved.toolchain("gcc").provider.value == "missing"
    error = refusal(resolved)
    assert isinstance(error, HostError) and "needs conda-forge's gcc_linux-64 11" in error.message


def test_system_alternatives_cannot_select_the_portable_compiler(recipe: Recipe, paths: Paths) -> None:
    host = BuildHost(facts=HostFacts(), sysroot_gcc=_conda_gcc(Path("/tc/gcc")))
    options = BuildOptions(portable=True, system_alternatives=True)
    with pytest.raises(UsageError, match="--system-alternatives cannot select a portable build's conda gcc"):
        resolve(recipe, options, host, load_knowledge(), paths=paths, environ={})


def test_the_compiler_follows_what_the_gcc_need_says(tmp_path: Path) -> None:
    request = Request("gcc", "11", sysroot="2.17")
    where = "x86_64-conda-linux-gnu/sysroot"
    host_conda = sysroot_gcc(Need(request, "host", Path("/opt/conda/bin/gcc-11")), "2.17", where, tmp_path)
    assert (host_conda.gcc, host_conda.gxx) == (Path("/opt/conda/bin/gcc-11"), Path("/opt/conda/bin/g++-11"))
    assert host_conda.sysroot == Path("/opt/conda") / where and host_conda.status == "host"
    offer = Offer(request, "conda", "gcc", "11-sysroot2.17", "conda-forge: ...")
    fetched = sysroot_gcc(Need(request, "fetch", offer=offer), "2.17", where, tmp_path)
    assert fetched.gcc == tmp_path / "gcc-11-sysroot2.17-conda" / "bin" / "gcc-11" and fetched.status == "fetch"
    missing = sysroot_gcc(Need(request, "missing", why="no provider"), "2.17", where, tmp_path)
    assert missing.gcc is None and missing.why == "no provider"


def test_the_plan_retags_after_verifying_and_the_shell_does_the_same(
    recipe: Recipe, paths: Paths, tmp_path: Path
) -> None:
    host = BuildHost(sysroot_gcc=_conda_gcc(tmp_path / "tc"), host_python_path="/opt/srcbuild/bin/python")
    plan = make_plan(_resolve(recipe, paths, host))
    ids = list(plan.step_ids)
    assert ids[-3:] == ["verify", "retag", "cache"]
    shell = render_shell(plan)
    assert '/opt/srcbuild/bin/python -m wheel tags --platform-tag "$tag" --remove "$wheel"' in shell
    assert "from srcbuild.verify.manylinux import wheel_platform_tag" in shell
    assert str(tmp_path / "tc" / "bin" / "gcc-11") in shell  # the compiler step registers the conda gcc
    plain = make_plan(_resolve(recipe, paths, dataclasses.replace(host, sysroot_gcc=None), portable=None))
    assert "retag" not in plain.step_ids


def test_an_unprobed_lookup_keys_on_the_commands_portable_setting(recipe: Recipe, paths: Paths) -> None:
    """``install`` and ``cache pull --recipe`` under SRCBUILD_PORTABLE (or the config file's
    ``portable``) find what a build under the same setting stored; other variables do not count."""
    built = _resolve(recipe, paths, BuildHost(sysroot_gcc=_conda_gcc(Path("/tc/gcc"))), portable=True)
    looked_up = resolve_unprobed(recipe, "torch", built.platform, {"SRCBUILD_PORTABLE": "1", "MAX_JOBS": "3"})
    assert build_fingerprint(looked_up) == build_fingerprint(built)
    plain = resolve_unprobed(recipe, "torch", built.platform, {"MAX_JOBS": "3"})
    assert build_fingerprint(plain) == build_fingerprint(resolve_unprobed(recipe, "torch", built.platform))
    assert build_fingerprint(plain) != build_fingerprint(built)
