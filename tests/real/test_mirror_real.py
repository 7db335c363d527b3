"""Mirrors of the real toolchain pieces that come from the package index and from Debian, used
with no network at all (``unshare -rn``).

- The ``pypi`` provider's cuDNN 8.5 wheel (the real 557 MB file, from the shared artifact cache:
  pip downloads it through ``--find-links`` with no index) and the real torch-scatter 2.1.2 sdist
  go into a mirror with ``mirror create``; offline, ``toolchain install cudnn --from pypi
  --mirror-dir`` provisions cuDNN from the mirror's index alone, and ``plan ext`` finds the sdist
  there with its sha256. A mirror that lacks them fails at once, naming the piece and the
  ``mirror create`` command that adds it.
- The Debian route's apt part: Debian bookworm's real ``nvidia-cuda-toolkit-gcc`` package (23 kB;
  the route's other packages are 92 MB, fetched the same way) with the archive's signed InRelease
  and the non-free Packages.xz, then ``apt-get update`` and ``apt-get download`` offline from the
  mirror with the options the Debian provider uses there; a changed byte in the .deb is refused by
  apt. (The route's NVIDIA component wheels take the same ``pip download --require-hashes`` path
  from the mirror's index as cuDNN above.)

The originals stay in the shared cache (other tests read them); what the offline commands see is
the mirror alone: pip's configuration, find-links and indexes are replaced by the mirror's, and
the network namespace has no network.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.host.toolchain import missing_components
from srcbuild.mirror.debian import mirror_debian
from srcbuild.toolchain.facts import DebianRoute
from srcbuild.toolchain.providers.apt import PrivateApt, configured_mirror, mirror_options
from tests.conftest import require_tool
from tests.real.artifacts import CUDNN_CU11_85, TORCH_213_CPU_311, TORCH_SCATTER_212_SDIST, cache_dir, fetch

pytestmark = [pytest.mark.real, pytest.mark.integration]

REPO_ROOT = Path(__file__).resolve().parents[2]
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def unshare_available() -> None:
    can = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can)


def srcbuild(argv: list[str], env: dict[str, str], offline: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = ["unshare", "-rn"] if offline else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "srcbuild", *argv],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
    )


CPU_RECIPE = 'name = "cpu-ext"\n[torch]\ntag = "v2.0.1"\n[toolchain]\npython = "3.11"\ngcc = "12"\ncuda = "none"\n'


def test_cudnn_and_an_extension_sdist_come_from_the_mirror_alone(tmp_path: Path) -> None:
    unshare_available()
    require_tool("gcc-12", shutil.which("gcc-12"))
    wheel = fetch(CUDNN_CU11_85)
    sdist = fetch(TORCH_SCATTER_212_SDIST)
    torch = fetch(TORCH_213_CPU_311)
    page = tmp_path / "index" / "torch-scatter"  # the sdist on a simple page, with the sha256 the index states
    page.mkdir(parents=True)
    (page / "index.html").write_text(f'<a href="{sdist.as_uri()}#sha256={TORCH_SCATTER_212_SDIST.sha256}">x</a>\n')
    cpu_recipe = tmp_path / "cpu-ext.toml"
    cpu_recipe.write_text(CPU_RECIPE)
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"),
        "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"),
    }
    connected = {
        **base,
        "PIP_CONFIG_FILE": "/dev/null",
        "PIP_INDEX_URL": (tmp_path / "index").as_uri() + "/",
        "PIP_NO_INDEX": "1",  # pip takes the cached wheel through find-links; nothing is downloaded again
        "PIP_FIND_LINKS": str(wheel.parent),
    }
    made_at = tmp_path / "made"
    create = ["mirror", "create", "--recipe", "kepler-k80-cu118", "--skip", "cuda", "--skip", "gcc", "--no-env"]
    made = srcbuild([*create, str(made_at), "--recipe", str(cpu_recipe), "--package", "ext",
                     "--ext", "torch-scatter==2.1.2"], connected)
    assert made.returncode == 0, made.stdout + made.stderr
    files = json.loads((made_at / "manifest.json").read_text())["files"]
    assert files[f"pypi/simple/nvidia-cudnn-cu11/{CUDNN_CU11_85.filename}"]["sha256"] == CUDNN_CU11_85.sha256
    assert files["pypi/simple/torch-scatter/torch_scatter-2.1.2.tar.gz"]["sha256"] == TORCH_SCATTER_212_SDIST.sha256
    assert json.loads((made_at / "manifest.json").read_text())["providers"] == ["pypi"]
    mirror = tmp_path / "moved"
    made_at.rename(mirror)  # a plain move: a mirror works wherever it lands
    lacking = tmp_path / "lacking"  # the same recipe with cuDNN left out
    assert srcbuild([*create, str(lacking), "--skip", "cudnn", "--package", "ext"], connected).returncode == 0

    offline = {**base, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains")}
    install = ["toolchain", "install", "cudnn", "8.5", "--cuda", "11.8", "--from", "pypi"]
    done = srcbuild([*install, "--json", "--mirror-dir", str(mirror)], offline, offline=True)
    assert done.returncode == 0, done.stdout + done.stderr
    [entry] = json.loads(done.stdout)
    prefix = Path(entry["prefix"])
    assert prefix.parent == tmp_path / "toolchains" and (prefix / "include" / "cudnn_version.h").is_file()
    assert (prefix / "lib64" / "libcudnn.so").exists()

    plan = ["plan", "ext", "torch-scatter==2.1.2", "--recipe", str(cpu_recipe), "--torch-wheel", str(torch)]
    plan += ["--env-backend", "venv", "--json", "--mirror-dir", str(mirror)]
    shown = srcbuild(plan, offline, offline=True)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    source = mirror / "pypi/simple/torch-scatter/torch_scatter-2.1.2.tar.gz"
    assert source.as_uri() in shown.stdout and TORCH_SCATTER_212_SDIST.sha256 in shown.stdout

    # what a mirror lacks fails at once: one line naming it, and the command that adds it
    fresh = {**offline, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains-2")}
    missing = srcbuild([*install, "--mirror-dir", str(lacking)], fresh, offline=True)
    assert missing.returncode == 4, missing.stdout + missing.stderr
    lines = [line for line in missing.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert lines == [
        "error: pip download nvidia-cudnn-cu11==8.5.0.96: nvidia-cudnn-cu11==8.5.0.96 is not in "
        f"the mirror {lacking}/'s package index",
        f"hint: add it on a connected machine: srcbuild mirror create {lacking} --recipe RECIPE",
    ], missing.stderr
    plan[2] = "torch-scatter==2.1.1"
    sdist_missing = srcbuild(plan, offline, offline=True)
    assert sdist_missing.returncode == 4, sdist_missing.stdout + sdist_missing.stderr
    assert (
        f"hint: add it on a connected machine: srcbuild mirror create {mirror} --recipe {cpu_recipe} "
        "--ext torch-scatter==2.1.1"
    ) in sdist_missing.stderr
    assert cache_dir() == wheel.parent and wheel.is_file()  # the shared originals stay where they were


def test_the_debian_packages_come_from_the_mirror_and_apt_checks_them(tmp_path: Path) -> None:
    unshare_available()
    require_tool("apt-get", shutil.which("apt-get"))
    archive = configured_mirror()
    require_tool("a Debian mirror in /etc/apt", archive)
    assert archive is not None
    route = DebianRoute("11.8", "11.8.89", "bookworm", ("non-free",), KEYRING, ("nvidia-cuda-toolkit-gcc",), (), None,
                        "test")
    mirror = tmp_path / "mirror"
    added = mirror_debian(mirror, route, archive, tmp_path / "scratch", dict(os.environ))
    deb = "debian/pool/non-free/n/nvidia-cuda-toolkit/nvidia-cuda-toolkit-gcc_11.8.0-5~deb12u1_amd64.deb"
    index = ("debian/dists/bookworm/InRelease", "debian/dists/bookworm/non-free/binary-amd64/Packages.xz")
    assert set(added) == {deb, *index}

    # apt drops privileges to its sandbox user, which a user namespace cannot map: run it as root there
    (tmp_path / "apt.conf").write_text('APT::Sandbox::User "root";\n')
    env = {"PATH": "/usr/bin:/bin", "APT_CONFIG": str(tmp_path / "apt.conf")}

    def fetch_offline(name: str) -> subprocess.CompletedProcess[str]:
        root = tmp_path / name
        apt = PrivateApt(root / "apt", (mirror / "debian").as_uri(), route.suite, route.components, KEYRING,
                         mirror_options(root / "apt"))
        apt.prepare()
        (root / "debs").mkdir()
        script = f"{shlex.join(apt.update_argv())} && {shlex.join(apt.download_argv(route.packages))}"
        return subprocess.run(["unshare", "-rn", "sh", "-c", script], cwd=root / "debs", env=env,
                              capture_output=True, text=True, timeout=300)

    done = fetch_offline("ok")
    assert done.returncode == 0, done.stdout + done.stderr
    (got,) = (tmp_path / "ok" / "debs").iterdir()
    assert got.read_bytes() == (mirror / deb).read_bytes()
    data = bytearray((mirror / deb).read_bytes())
    data[len(data) // 2] ^= 0x01
    (mirror / deb).write_bytes(bytes(data))
    refused = fetch_offline("changed")
    assert refused.returncode != 0 and "Hash Sum mismatch" in refused.stderr + refused.stdout, refused.stderr
    assert not list((tmp_path / "changed" / "debs").glob("*.deb"))

    # a mirror without the route: the Debian provider fails at once, naming the packages and the command
    recipe = tmp_path / "cpu-ext.toml"
    recipe.write_text(CPU_RECIPE)
    base = {**env, "HOME": str(tmp_path), "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
            "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"), "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "tc")}
    empty = tmp_path / "empty"
    made = srcbuild(["mirror", "create", str(empty), "--recipe", str(recipe), "--package", "ext", "--skip", "gcc",
                     "--no-env"], base)
    assert made.returncode == 0, made.stdout + made.stderr
    missing = srcbuild(["toolchain", "install", "cuda", "11.8", "--from", "debian", "--mirror-dir", str(empty)],
                       base, offline=True)
    assert missing.returncode == 4, missing.stdout + missing.stderr
    lines = [line for line in missing.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert lines[0].startswith(
        "error: Debian bookworm's nvidia-cuda-toolkit, libnvvm4, libcudart11.0, nvidia-cuda-toolkit-gcc, "
        f"nvidia-cuda-dev are not in the mirror {empty}/ (apt-get update (private sources list) failed"
    ), missing.stderr
    assert lines[1:] == [
        "hint: add it on a connected machine: SRCBUILD_TOOLCHAIN_PROVIDERS=debian srcbuild mirror create "
        f"{empty} --recipe RECIPE"
    ]


def test_cuda_from_the_debian_route_is_provisioned_from_the_mirror_alone(tmp_path: Path) -> None:
    """``toolchain install cuda 11.8 --from debian`` offline from a mirror of the route (Debian's
    packages and NVIDIA's 11 component wheels), with no ``--from``: the mirror's manifest names the
    route, which is tried first. It runs in CI: measured here with pip's cache empty, 61 s for the
    whole test (a 1.1 GiB mirror, 97 MiB of it Debian's) and 40 s of CPU (27 s user, 13 s system,
    every process counted); with pip's cache warm and the machine shared, 88 s and 47 s of CPU."""
    unshare_available()
    require_tool("a Debian mirror in /etc/apt", configured_mirror())
    (tmp_path / "apt.conf").write_text('APT::Sandbox::User "root";\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
           "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"), "APT_CONFIG": str(tmp_path / "apt.conf")}
    mirror = tmp_path / "mirror"
    made = srcbuild(["mirror", "create", str(mirror), "--recipe", "kepler-k80-cu118", "--package", "ext", "--skip",
                     "gcc", "--skip", "cudnn", "--no-env"], {**env, "SRCBUILD_TOOLCHAIN_PROVIDERS": "debian"})
    assert made.returncode == 0, made.stdout + made.stderr
    files = json.loads((mirror / "manifest.json").read_text())["files"]
    # nvidia-cuda-dev is the fifth package: the three static and stub files of the complete-home contract
    assert sum(1 for p in files if p.endswith(".deb")) == 5 and sum(1 for p in files if p.endswith(".whl")) == 11
    offline = {**env, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains")}
    # no --from: the mirror's manifest names the Debian route, which is then tried first
    done = srcbuild(["toolchain", "install", "cuda", "11.8", "--mirror-dir", str(mirror)], offline, offline=True)
    assert done.returncode == 0, done.stdout + done.stderr
    home = tmp_path / "toolchains" / "cuda-11.8-debian"
    assert missing_components(home, "11.8.89") == ()
