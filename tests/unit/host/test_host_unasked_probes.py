"""Probes doctor does not run where the answer is already known: ``docker info`` with no daemon
to reach, ``lspci`` when sysfs lists no NVIDIA display function."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from srcbuild.host import probe_host
from srcbuild.host.gpu import nvidia_on_pci_bus
from srcbuild.host.system import docker_unreachable

GTX_1080 = ("0000:01:00.0", "0x10de", "0x030000")  # a GeForce: VGA-compatible
TESLA_K80 = ("0000:04:00.0", "0x10de", "0x030200")  # a 3D controller
NVIDIA_AUDIO = ("0000:01:00.1", "0x10de", "0x040300")  # the GeForce's HDMI audio function
INTEL_VGA = ("0000:00:02.0", "0x8086", "0x030000")


def _pci(root: Path, *devices: tuple[str, str, str]) -> None:
    for address, vendor, kind in devices:
        device = root / "sys/bus/pci/devices" / address
        device.mkdir(parents=True)
        (device / "vendor").write_text(vendor + "\n")
        (device / "class").write_text(kind + "\n")


def _tools(tmp_path: Path, *names: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in names:
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path / "home")}


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        ((INTEL_VGA, NVIDIA_AUDIO), False),  # NVIDIA's, but not a display function
        ((INTEL_VGA, GTX_1080), True),
        ((TESLA_K80,), True),
        ((), None),  # sysfs lists nothing: lspci answers
    ],
)
def test_nvidia_on_pci_bus(tmp_path: Path, devices: tuple[tuple[str, str, str], ...], expected: bool | None) -> None:
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    _pci(tmp_path, *devices)
    assert nvidia_on_pci_bus(tmp_path) is expected


def test_no_sysfs_or_an_unreadable_device_leaves_it_to_lspci(tmp_path: Path) -> None:
    assert nvidia_on_pci_bus(tmp_path) is None
    _pci(tmp_path, INTEL_VGA)
    (tmp_path / "sys/bus/pci/devices/0000:00:02.0/class").unlink()
    assert nvidia_on_pci_bus(tmp_path) is None


def test_lspci_runs_only_where_sysfs_shows_an_nvidia_gpu(tmp_path: Path) -> None:
    environ = _tools(tmp_path, "lspci")
    asked: list[str] = []

    def run(argv: Sequence[str], **_: object) -> str | None:
        asked.append(Path(argv[0]).name)
        return None

    _pci(tmp_path, INTEL_VGA)
    facts = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run)
    assert "lspci" not in asked
    assert "GPU: no NVIDIA display controller on the PCI bus (vendor 10de in /sys/bus/pci/devices)" in facts.missing
    _pci(tmp_path, GTX_1080)
    facts = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run)
    assert "lspci" in asked
    assert "lspci: `lspci -nn` failed" in facts.missing  # this run answers nothing


def test_docker_is_not_run_without_a_daemon_to_reach(tmp_path: Path) -> None:
    environ = _tools(tmp_path, "docker")
    asked: list[str] = []

    def run(argv: Sequence[str], **_: object) -> str | None:
        asked.append(Path(argv[0]).name)
        return '{"runc": {"path": "runc"}}'

    facts = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run)
    assert "docker" not in asked
    assert facts.docker is not None and facts.docker.runtimes is None
    assert (
        "docker: no daemon: no /var/run/docker.sock, and no DOCKER_HOST or docker context names another"
        in facts.missing
    )
    (tmp_path / "var/run").mkdir(parents=True)
    (tmp_path / "var/run/docker.sock").touch()
    facts = probe_host(environ=environ, root=tmp_path, work_dir=tmp_path / "work", run=run)
    assert asked == ["docker"] and facts.docker is not None and facts.docker.runtimes == ("runc",)


def test_docker_decides_where_something_names_its_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bare = {"HOME": str(home)}
    assert docker_unreachable(bare, tmp_path).startswith("no daemon")
    assert docker_unreachable({**bare, "DOCKER_HOST": "ssh://builder"}, tmp_path) == ""
    assert docker_unreachable({**bare, "DOCKER_CONTEXT": "rootless"}, tmp_path) == ""
    assert docker_unreachable({}, tmp_path) == ""  # no HOME: docker knows where its config is
    (home / ".docker").mkdir(parents=True)
    (home / ".docker/config.json").write_text('{"auths": {}}')
    assert docker_unreachable(bare, tmp_path).startswith("no daemon")
    (home / ".docker/config.json").write_text('{"currentContext": "rootless"}')
    assert docker_unreachable(bare, tmp_path) == ""
    other = tmp_path / "other"
    other.mkdir()
    assert docker_unreachable({**bare, "DOCKER_CONFIG": str(other)}, tmp_path).startswith("no daemon")
    (home / ".docker/config.json").unlink()
    (home / ".docker/config.json").mkdir()  # cannot be read as a file
    assert docker_unreachable(bare, tmp_path) == ""
