"""The venv backend for real: the host Python, ``python -m venv`` and pip from a local wheel dir."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from srcbuild.envs import EnvSpec, choose_backend
from srcbuild.envs.backends.base import CommandIO
from srcbuild.envs.backends.venv_backend import host_python_version
from srcbuild.errors import EnvironmentError_


def io() -> CommandIO:
    """What the commands run with: this test's environment (fixtures may have changed it)."""
    return CommandIO(dict(os.environ), None)

pytestmark = pytest.mark.integration


def test_venv_backend_creates_and_reuses(offline_pip: Path, tmp_path: Path) -> None:
    spec = EnvSpec(
        python=host_python_version(),
        conda=("srcbuild-demo-greet 1.0.*",),
        pip_equivalents=(("srcbuild-demo-greet 1.0.*", "srcbuild-demo-greet==1.0.*"),),
    )
    backend = choose_backend(None, spec, {"PATH": ""})
    assert backend.name == "venv"
    env = backend.ensure(spec, tmp_path / "envs", None, tmp_path / "env.log", io())
    assert not env.reused
    assert env.prefix.name == "venv-" + spec.as_pip_only().key
    assert (env.prefix / "pyvenv.cfg").is_file()
    run = subprocess.run(
        [env.python, "-c", "import srcbuild_demo_greet as g; print(g.GREETING)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip() == "hello from srcbuild_demo_greet 1.0"
    assert env.env_changes.final_values() == {"VIRTUAL_ENV": str(env.prefix)}
    again = backend.ensure(spec, tmp_path / "envs", None, tmp_path / "env.log", io())
    assert again.reused and again.prefix == env.prefix


def test_pip_failure_names_the_package_and_leaves_no_env(offline_pip: Path, tmp_path: Path) -> None:
    spec = EnvSpec(python=host_python_version(), pip=("srcbuild-demo-greet==9.9",))
    with pytest.raises(EnvironmentError_) as err:
        choose_backend("venv", spec, {"PATH": ""}).ensure(spec, tmp_path / "envs", None, tmp_path / "env.log", io())
    assert err.value.message.startswith("pip install failed (exit 1): ")
    assert "srcbuild-demo-greet==9.9" in err.value.message
    assert not [p for p in (tmp_path / "envs").iterdir() if not p.name.startswith(".")]
