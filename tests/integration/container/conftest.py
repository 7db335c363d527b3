"""Podman for real, with no registry: a Debian base image made here with debootstrap.

The base is debootstrapped from the apt mirror this machine is configured with (read from its apt
sources at run time), gets this machine's CA bundle (so TLS through the machine's configured
certificate authorities works inside), is imported with ``podman import`` and gets a venv for the
build environment. It is tagged by a hash of what went into it and reused while that exists.

Sandboxes: crun cannot set rlimits here (``error setting rlimit type 7: operation not
permitted``), so the tests run podman with ``--runtime runc`` and a ``containers.conf`` whose
``default_ulimits = []``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.integration.execute.conftest import build_venv, world  # noqa: F401  (fixtures)

PACKAGES = "python3,python3-venv,git,ca-certificates,gcc-11,g++-11,cmake,ninja-build,make"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def apt_mirror_and_suite() -> tuple[str, str]:
    """The first Debian mirror and the release of this machine's apt sources."""
    suite = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            suite = line.split("=", 1)[1].strip('"')
    texts = [p.read_text() for p in sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))]
    for text in texts:  # deb822: "URIs: http://host/debian"
        for match in re.finditer(r"^URIs:\s*(\S+)", text, re.M):
            if not match.group(1).rstrip("/").endswith("-security"):
                return match.group(1), suite
    sources = Path("/etc/apt/sources.list")
    if sources.is_file():
        for match in re.finditer(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", sources.read_text(), re.M):
            if "security" not in match.group(1):
                return match.group(1), match.group(2)
    pytest.skip("no Debian apt source configured on this machine")


@pytest.fixture(scope="session")
def podman_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    require_tool("podman", shutil.which("podman"))
    require_tool("runc", shutil.which("runc"))
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def podman(env: dict[str, str], *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **kw,  # type: ignore[call-overload]
    )


@pytest.fixture(scope="session")
def base_image(podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Debian image with Python, git, gcc-11, CMake and Ninja, and a venv at /opt/buildenv."""
    mirror, suite = apt_mirror_and_suite()
    stamp = hashlib.sha256(f"{PACKAGES} {mirror} {suite}".encode() + CA_BUNDLE.read_bytes()).hexdigest()[:12]
    tag = f"localhost/srcbuild-test-base:{suite}-{stamp}"
    if podman(podman_env, "image", "exists", tag).returncode == 0:
        return tag
    require_tool("debootstrap (and root to run it)", shutil.which("debootstrap") and os.geteuid() == 0)
    root = tmp_path_factory.mktemp("rootfs") / "rootfs"
    done = subprocess.run(
        ["debootstrap", "--variant=minbase", f"--include={PACKAGES}", suite, str(root), mirror],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    shutil.copy2(CA_BUNDLE, root / "etc/ssl/certs/ca-certificates.crt")
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    imported = podman(podman_env, "import", "-", f"{tag}-rootfs", stdin=tar.stdout)
    tar.wait()
    assert imported.returncode == 0, imported.stdout
    shutil.rmtree(root, ignore_errors=True)
    ctx = tmp_path_factory.mktemp("base-context")
    (ctx / "Dockerfile").write_text(f"FROM {tag}-rootfs\nRUN python3 -m venv /opt/buildenv\n")
    built = podman(podman_env, "build", "--runtime", "runc", "-t", tag, str(ctx))
    assert built.returncode == 0, built.stdout[-3000:]
    return tag
