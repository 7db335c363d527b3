"""The venv backend for real: the host Python, ``python -m venv`` and pip from a local wheel dir."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from srcbuild.envs import EnvSpec, choose_backend
from srcbuild.envs.backends.venv_backend import host_python_version
from srcbuild.errors import EnvironmentError_

pytestmark = pytest.mark.integration


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, name: str = "srcbuild_demo_greet", version: str = "1.0") -> Path:
    """A minimal pure-Python wheel, written by hand (no build backend, no network)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"GREETING = 'hello from {name} {version}'\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
    return path


@pytest.fixture
def offline_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a local wheel directory: no index, no user or site configuration."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def test_venv_backend_creates_and_reuses(offline_pip: Path, tmp_path: Path) -> None:
    spec = EnvSpec(
        python=host_python_version(),
        conda=("srcbuild-demo-greet 1.0.*",),
        pip_equivalents=(("srcbuild-demo-greet 1.0.*", "srcbuild-demo-greet==1.0.*"),),
    )
    backend = choose_backend(None, spec, {"PATH": ""})
    assert backend.name == "venv"
    env = backend.ensure(spec, tmp_path / "envs", None, tmp_path / "env.log")
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
    again = backend.ensure(spec, tmp_path / "envs", None, tmp_path / "env.log")
    assert again.reused and again.prefix == env.prefix


def test_pip_failure_names_the_package_and_leaves_no_env(offline_pip: Path, tmp_path: Path) -> None:
    spec = EnvSpec(python=host_python_version(), pip=("srcbuild-demo-greet==9.9",))
    with pytest.raises(EnvironmentError_) as err:
        choose_backend("venv", spec, {"PATH": ""}).ensure(spec, tmp_path / "envs", None, tmp_path / "env.log")
    assert err.value.message.startswith("pip install failed (exit 1): ")
    assert "srcbuild-demo-greet==9.9" in err.value.message
    assert not [p for p in (tmp_path / "envs").iterdir() if not p.name.startswith(".")]
