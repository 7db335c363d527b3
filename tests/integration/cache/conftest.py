"""Fixtures for the cache integration tests: a loopback S3 server, throwaway venvs, two machines."""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real ``moto_server`` on a free loopback port."""
    exe = shutil.which("moto_server")
    require_tool("moto_server (pip install 'moto[server]')", exe)
    port = free_port()
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture()
def s3_bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """A fresh bucket on the moto server, with dummy credentials in the environment."""
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    readable = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower().replace("_", "-"))[:40].strip("-")
    name = f"wheels-{readable}-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:8]}"  # one per test case
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def venv_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One venv with pip, created once; tests copy it (a fresh target each time)."""
    root = tmp_path_factory.mktemp("venv-template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    return root


@pytest.fixture()
def fresh_venv(venv_template: Path, tmp_path: Path) -> Path:
    """A throwaway environment prefix (``--into``) with nothing installed."""
    target = tmp_path / "venv"
    shutil.copytree(venv_template, target, symlinks=True)
    return target


def make_key(directory: Path, name: str) -> Path:
    """A real ed25519 key pair made by ssh-keygen: ``directory/name`` and ``directory/name.pub``."""
    require_tool("ssh-keygen (openssh-client)", shutil.which("ssh-keygen"))
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@lab", "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return key


@pytest.fixture()
def signer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Alice's key: it signs what this test pushes (SRCBUILD_SIGNING_KEY), and this user trusts it."""
    from srcbuild.cli import main

    key = make_key(tmp_path / "keys", "alice")
    monkeypatch.setenv("SRCBUILD_SIGNING_KEY", str(key))
    assert main(["cache", "trust", "add", f"{key}.pub"]) == 0
    return key


@pytest.fixture()
def pypiserver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real pypiserver on a free loopback port that accepts uploads without authentication:
    (its root URL, the directory it serves)."""
    exe = shutil.which("pypi-server", path=str(Path(sys.executable).parent)) or shutil.which("pypi-server")
    require_tool("pypi-server (pip install pypiserver)", exe)
    packages = tmp_path / "index-packages"
    packages.mkdir()
    port = free_port()
    argv = [str(exe), "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", ".", str(packages)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/", packages
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture()
def plain_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip with none of this machine's settings (config files, extra wheel sources): it sees the
    test's index only, like pip on a fresh machine (what ``pip --isolated`` does, for pip run by srcbuild)."""
    import os

    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in list(os.environ):
        if name.startswith("PIP_") and name != "PIP_CONFIG_FILE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
