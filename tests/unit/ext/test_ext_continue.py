"""The command an ext build's interrupt or failure prints is an `srcbuild ext` command line that
the CLI accepts (each option known, the requirement and recipe where they belong)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from srcbuild.cli.ext import ext_command
from srcbuild.ext.run import TorchRequest, continue_command
from srcbuild.ext.source import parse_requirement
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.resolve import BuildOptions


def _accepted(command: str) -> dict[str, object]:
    argv = shlex.split(command)
    assert argv[:2] == ["srcbuild", "ext"]
    with click.Context(ext_command) as ctx:
        ext_command.parse_args(ctx, argv[2:])
        return dict(ctx.params)


def test_the_continue_command_is_an_ext_command_the_cli_accepts(tmp_path: Path) -> None:
    paths = Paths.resolve(work_dir=tmp_path, cache_dir=tmp_path / "c", environ={})
    recipe = RecipeCatalog(paths).load("kepler-k80-cu118")
    request = parse_requirement("torch-cluster==1.6.3")
    command = continue_command(recipe, request, TorchRequest(version="2.0.1"), BuildOptions(), paths)
    assert command == "srcbuild ext torch-cluster==1.6.3 --torch 2.0.1 --recipe kepler-k80-cu118 --resume"
    params = _accepted(command)
    assert params["requirement"] == "torch-cluster==1.6.3" and params["resume"] is True
    assert params["torch_version"] == "2.0.1" and params["recipe"] == "kepler-k80-cu118"
    wheel = tmp_path / "torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl"
    env = BuildOptions(env_prefix=str(tmp_path / "venv"))
    with_env = continue_command(recipe, request, TorchRequest(wheel=wheel), env, paths)
    params = _accepted(with_env)
    assert params["torch_wheel"] == str(wheel) and params["env_prefix"] == str(tmp_path / "venv")


def test_a_cpu_torch_needs_no_recipe_and_a_cuda_build_names_the_missing_option() -> None:
    import pytest

    from srcbuild.cli.ext import recipe_for
    from srcbuild.errors import UsageError

    assert recipe_for({"recipe": None, "torch_version": "2.13.0+cpu"}) == "cpu"
    assert recipe_for({"recipe": None, "torch_wheel": "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"}) == "cpu"
    assert recipe_for({"recipe": "kepler-k80-cu118", "torch_version": "2.13.0+cpu"}) == "kepler-k80-cu118"
    with pytest.raises(UsageError) as err:
        recipe_for({"recipe": None, "torch_version": "2.0.1"})
    assert err.value.message == "--recipe is needed: it names the GPUs (archs) and the CUDA to build the extension for"
