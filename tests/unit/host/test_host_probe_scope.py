"""probe_host(toolchain_only=True), as a build uses it, asks nothing about GPUs, the driver or docker."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srcbuild.host import probe_host


def _tool(bin_dir: Path, name: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_a_build_probe_skips_gpu_driver_and_docker(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("nvidia-smi", "lspci", "docker", "gcc-11"):
        _tool(bin_dir, name)
    asked: list[str] = []

    def run(argv: Sequence[str], **_: object) -> str | None:
        asked.append(Path(argv[0]).name)
        return None

    (tmp_path / "var/run").mkdir(parents=True)
    (tmp_path / "var/run/docker.sock").touch()  # a daemon may answer: docker is asked
    environ = {"PATH": str(bin_dir)}
    full = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run)
    assert {"nvidia-smi", "lspci", "docker"} <= set(asked)
    assert any("docker" in line for line in full.missing)
    asked.clear()
    build = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run, toolchain_only=True)
    assert not {"nvidia-smi", "lspci", "docker"} & set(asked)
    assert "gcc-11" in asked  # the toolchain is still probed
    assert build.gpus == () and build.driver is None and build.docker is None
    assert not any("docker" in line for line in build.missing)
