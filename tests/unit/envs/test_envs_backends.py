"""Backend selection and the exact command lines of the conda-family and venv backends."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import srcbuild.envs.backends as backends
from srcbuild.envs import choose_backend
from srcbuild.envs.backends.conda_family import CondaFamilyBackend
from srcbuild.envs.backends.rattler_backend import rattler_available
from srcbuild.envs.backends.venv_backend import VenvBackend, host_python_version, venv_unsuitable
from srcbuild.envs.channels import ChannelRouting
from srcbuild.envs.lockfile import LockedPackage, lockfile_from
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import HostError, UsageError

HOST = host_python_version()
requires_rattler = pytest.mark.skipif(not rattler_available(), reason="py-rattler needs Python >= 3.10")
CONDA_SPEC = EnvSpec(
    python="3.8",
    conda=("numpy <2", "magma-cuda92"),
    pip=("pybind11==2.6",),
    channels=("conda-forge", "pytorch"),
    pip_equivalents=(("numpy <2", "numpy<2"), ("magma-cuda92", "")),
    routing=ChannelRouting(mirrors=(("conda-forge", "https://mirror.example.edu/conda-forge"),)),
)
PIP_SPEC = EnvSpec(python=HOST, conda=("cmake <4",), pip_equivalents=(("cmake <4", "cmake<4"),))


def fake_tools(tmp_path: Path, *names: str) -> dict[str, str]:
    """A PATH holding executables with these names (only looked up, never run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\nexit 1\n")
        tool.chmod(0o755)
    return {"PATH": str(bin_dir)}


@requires_rattler
def test_rattler_is_the_default_without_conda(tmp_path: Path) -> None:
    assert choose_backend(None, CONDA_SPEC, fake_tools(tmp_path)).name == "rattler"


def test_nothing_to_make_a_conda_env_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "rattler_available", lambda: False)
    with pytest.raises(HostError) as err:
        choose_backend(None, CONDA_SPEC, fake_tools(tmp_path))
    assert err.value.message == (
        "no way to make a conda environment here: no micromamba, mamba or conda on PATH, and no py-rattler"
    )
    with pytest.raises(HostError) as err:
        choose_backend("rattler", CONDA_SPEC, fake_tools(tmp_path))
    assert err.value.message == "--env-backend rattler needs py-rattler, which is not installed for this Python"


def test_installed_tools_are_preferred_micromamba_first(tmp_path: Path) -> None:
    environ = fake_tools(tmp_path, "conda", "mamba")
    backend = choose_backend(None, CONDA_SPEC, environ)
    assert backend.name == "mamba"
    assert isinstance(backend, CondaFamilyBackend) and backend.executable == str(tmp_path / "bin" / "mamba")
    assert choose_backend(None, CONDA_SPEC, fake_tools(tmp_path, "micromamba")).name == "micromamba"


def test_venv_when_host_python_and_pip_suffice(tmp_path: Path) -> None:
    assert choose_backend(None, PIP_SPEC, fake_tools(tmp_path, "conda")).name == "venv"


@requires_rattler
def test_named_backend_and_environment_variable(tmp_path: Path) -> None:
    environ = fake_tools(tmp_path, "conda")
    assert choose_backend("rattler", PIP_SPEC, environ).name == "rattler"
    assert choose_backend(None, PIP_SPEC, {**environ, "SRCBUILD_ENV_BACKEND": "conda"}).name == "conda"


def test_unknown_backend_lists_valid_names() -> None:
    with pytest.raises(UsageError) as err:
        choose_backend("pixi", CONDA_SPEC, {"PATH": ""})
    assert err.value.message == "unknown environment backend 'pixi'"
    assert err.value.hint == "choose one of: conda, mamba, micromamba, rattler, venv"


def test_named_tool_missing_is_a_host_error() -> None:
    with pytest.raises(HostError) as err:
        choose_backend("micromamba", CONDA_SPEC, {"PATH": ""})
    assert err.value.message == "--env-backend micromamba: micromamba is not on PATH"


def test_venv_refused_with_the_reason() -> None:
    assert venv_unsuitable(CONDA_SPEC) is not None
    other = "3.8" if HOST != "3.8" else "3.9"
    assert venv_unsuitable(EnvSpec(python=other)) == (
        f"the recipe needs Python {other} and srcbuild runs on Python {HOST}"
    )
    with pytest.raises(UsageError) as err:
        choose_backend("venv", EnvSpec(python=HOST, conda=("magma-cuda92",)), {"PATH": ""})
    assert err.value.message == "--env-backend venv cannot make this environment: pip cannot provide magma-cuda92"


def test_micromamba_solve_command() -> None:
    backend = CondaFamilyBackend("micromamba", "/opt/bin/micromamba")
    prefix = Path("/w/envs") / CONDA_SPEC.key
    commands = backend.commands(CONDA_SPEC, prefix, None)
    assert commands[0].argv == (
        "/opt/bin/micromamba",
        "create",
        "-y",
        "-p",
        str(prefix),
        "--override-channels",
        "-c",
        "https://mirror.example.edu/conda-forge",
        "-c",
        "pytorch",
        "python 3.8.*",
        "numpy <2",
        "magma-cuda92",
        "pip",  # the pip packages below need it
    )
    assert commands[1].argv == (
        str(prefix / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "pybind11==2.6",
    )


def test_conda_installs_a_lockfile_from_an_explicit_list(tmp_path: Path) -> None:
    package = LockedPackage(
        name="numpy",
        version="1.19.5",
        url="https://channels.example.org/conda-forge/linux-64/numpy-1.19.5-py38_0.tar.bz2",
        sha256="a" * 64,
        md5="b" * 32,
    )
    lockfile = tmp_path / "r.conda-lock.yml"
    lockfile_from([package], CONDA_SPEC.hash(), CONDA_SPEC.channels).write(lockfile)
    backend = CondaFamilyBackend("conda", "conda")
    prefix = tmp_path / "envs" / CONDA_SPEC.key
    assert backend.create_command(CONDA_SPEC, prefix, lockfile).argv == (
        "conda",
        "create",
        "-y",
        "-p",
        str(prefix),
        "--file",
        str(tmp_path / "envs" / f".{CONDA_SPEC.key}.explicit.txt"),
    )
    assert backend.explicit_lines(CONDA_SPEC, lockfile) == [
        "@EXPLICIT",
        "https://mirror.example.edu/conda-forge/linux-64/numpy-1.19.5-py38_0.tar.bz2#" + "b" * 32,
    ]
    lines = backend.describe(CONDA_SPEC, prefix, lockfile)
    assert (
        lines[0]
        == f"write {prefix.parent / ('.' + prefix.name + '.explicit.txt')} (@EXPLICIT url#md5 lines from {lockfile})"
    )


def test_venv_commands() -> None:
    prefix = Path("/w/envs/venv-x")
    commands = VenvBackend().commands(PIP_SPEC, prefix)
    assert commands[0].argv == (sys.executable, "-m", "venv", str(prefix))
    assert commands[1].argv[-1] == "cmake<4"
