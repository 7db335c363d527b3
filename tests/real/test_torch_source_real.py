"""The canary on real PyTorch: Debian's pytorch 1.13.1+dfsg source, configured by torch's own CMake
with srcbuild's provisioned CUDA 11.8 (the Debian route), cuDNN 8.5 (the package index), gcc 11
and Debian's Open MPI for compute capability 3.7, then broken on purpose three ways.

The source comes through a private apt configuration with a ``deb-src`` entry for the mirror this
machine's apt uses (read at run time), pinned by sha256 and kept in ``~/.cache/srcbuild-ci/real``
(``tests/real/artifacts.py``'s cache). Its tree becomes a local git repository at the upstream tag
v1.13.1, handed to srcbuild through a mirror rule as a user's mirror would be; the tree's
system-library edits are srcbuild patches (``patches/torch/v1.13.1``), applied by the build.
One configured tree serves the passing canary, c10_cuda and the ATen sample (module scope).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.toolchain.providers.apt import configured_mirror
from srcbuild.verify.fatbin import scan_elf
from srcbuild.verify.kernels import Kernels
from tests.conftest import require_tool
from tests.real.artifacts import cache_dir, sha256_of

pytestmark = [pytest.mark.real, pytest.mark.integration, pytest.mark.xdist_group("torch-source")]  # one tree

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = REPO_ROOT / "tests" / "real" / "recipes" / "debian-torch113-k80.toml"
ORIG = "pytorch_1.13.1+dfsg.orig.tar.xz"
# Debian bookworm's pytorch 1.13.1+dfsg-4 .dsc (Checksums-Sha256), read from the signed Sources index
ORIG_SHA256 = "d0355588b8528566d477e6ebf1b4d9d036a6fd75711339f66b27472ce5879dc7"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# The ATen CUDA objects built after the canary, as data: small ones (FillKernel-sized), within CI's budget
ATEN_SAMPLE = ("aten/src/ATen/native/cuda/FillKernel.cu.o",)
# the tarball's files keep its owner ids when root unpacks it: git would call the tree "dubious"
GIT = ["git", "-c", "safe.directory=*", "-c", "user.name=srcbuild", "-c", "user.email=srcbuild@example.invalid"]
DATES = {"GIT_AUTHOR_DATE": "2022-12-15T00:00:00Z", "GIT_COMMITTER_DATE": "2022-12-15T00:00:00Z"}


def _orig_tarball() -> Path:
    """Debian's orig tarball, fetched once with apt-get source through a private deb-src entry."""
    cached = cache_dir() / ORIG
    if cached.is_file() and sha256_of(cached) == ORIG_SHA256:
        return cached
    mirror = configured_mirror()
    if mirror is None or shutil.which("apt-get") is None:
        require_tool("apt-get with a Debian mirror", None)
    work = cache_dir() / "apt-pytorch"
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("etc/none", "lists/partial", "cache/archives/partial", "get"):
        (work / sub).mkdir(parents=True)
    (work / "etc" / "sources.list").write_text(f"deb-src [signed-by={KEYRING}] {mirror} bookworm main\n")
    options = [
        "-o", f"Dir::Etc::SourceList={work / 'etc' / 'sources.list'}",
        "-o", f"Dir::Etc::SourceParts={work / 'etc' / 'none'}",
        "-o", f"Dir::State::Lists={work / 'lists'}",
        "-o", f"Dir::Cache={work / 'cache'}",
    ]
    subprocess.run(["apt-get", *options, "-qq", "update"], check=True, timeout=300)
    # 1.13.1+dfsg-4's debian.tar.xz answers 404 on the archive: apt fails after fetching the rest
    subprocess.run(["apt-get", *options, "-qq", "source", "--download-only", "pytorch=1.13.1+dfsg-4"],
                   cwd=work / "get", timeout=900)
    got = work / "get" / ORIG
    assert got.is_file() and sha256_of(got) == ORIG_SHA256, f"apt-get source did not leave {ORIG} with its sha256"
    got.replace(cached)
    shutil.rmtree(work, ignore_errors=True)
    return cached


@pytest.fixture(scope="module")
def mirror_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mirror root holding pytorch/pytorch.git: the Debian tree as one commit, tagged v1.13.1."""
    tarball = _orig_tarball()
    root = tmp_path_factory.mktemp("mirror")
    src = tmp_path_factory.mktemp("src")
    subprocess.run(["tar", "-xf", str(tarball), "-C", str(src), "--no-same-owner"], check=True, timeout=600)
    tree = src / "pytorch-1.13.1"
    env = {**os.environ, **DATES}
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(tree)], check=True)
    subprocess.run([*GIT, "-C", str(tree), "add", "-A", "-f", "."], check=True)  # -f: its .gitignore too
    subprocess.run([*GIT, "-C", str(tree), "commit", "-q", "-m", f"pytorch 1.13.1 from Debian's {ORIG}"],
                   check=True, env=env)
    subprocess.run([*GIT, "-C", str(tree), "tag", "-a", "v1.13.1", "-m", "v1.13.1"], check=True, env=env)
    (root / "pytorch").mkdir()
    subprocess.run([*GIT, "clone", "-q", "--bare", str(tree), str(root / "pytorch" / "pytorch.git")], check=True)
    shutil.rmtree(src)
    return root


@pytest.fixture(scope="module")
def build_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build environment: torch 1.13's Python dependencies for a configure (no MKL: BLAS=Generic)."""
    prefix = tmp_path_factory.mktemp("env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True)
    subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "numpy<2", "pyyaml",
                    "typing_extensions", "setuptools<70"], check=True, timeout=600)
    return prefix


class Real:
    def __init__(self, root: Path, mirror: Path, env_prefix: Path, cuda_home: Path) -> None:
        self.root, self.mirror, self.env_prefix = root, mirror, env_prefix
        self.environ = {k: v for k, v in os.environ.items() if not k.startswith("CUDA")}
        self.environ["SRCBUILD_TOOLCHAIN_DIR"] = str(cuda_home.parent)

    def run(self, *extra: str, recipe: Path = RECIPE, work: str = "work", env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "srcbuild", "torch", "--recipe", str(recipe),
                "--mirror", f"https://github.com/=file://{self.mirror}/", "--env", str(self.env_prefix),
                "--work-dir", str(self.root / work), "--cache-dir", str(self.root / "cache"),
                "--ignore-preflight", *extra]  # torch 1.13.1 on Python 3.11: Debian builds it so
        return subprocess.run(argv, env={**self.environ, **(env or {})}, cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=1500)

    def tree(self, work: str = "work") -> Path:
        return self.root / work / "src" / "debian-torch113-k80" / "pytorch" / "build"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, mirror_root: Path, build_env: Path, cuda118_home: Path) -> Real:
    for tool in ("mpicc", "g++-11", "ninja", "cmake"):
        if shutil.which(tool) is None:
            require_tool(tool, None)
    return Real(tmp_path_factory.mktemp("real"), mirror_root, build_env, cuda118_home)


@pytest.fixture(scope="module")
def canary(real: Real) -> dict:
    done = real.run("--canary", "--json")
    assert done.returncode == 0, done.stderr[-6000:]
    return json.loads(done.stdout)


def test_the_canary_reads_back_the_provisioned_toolchain(canary: dict, real: Real, cuda118_home: Path) -> None:
    found = {r["key"]: r for r in canary["canary"]["readout"]}
    assert all(r["ok"] for r in found.values()), found
    assert found["cuda-version"]["cmake"] == "11.8"
    assert Path(found["cuda-home"]["cmake"]).resolve() == cuda118_home.resolve()
    assert found["cudnn-version"]["cmake"] == "8.5.0"
    assert "cudnn-8.5.0.96-cuda11-pypi" in found["cudnn-library"]["cmake"]
    assert found["mpi"]["cmake"] == "ON" and found["archs"]["cmake"] == "sm_37"
    [fill, mpi] = canary["canary"]["units"]
    assert fill["target"].endswith("aten/src/ATen/native/cuda/FillKernel.cu.o") and fill["sass"] == [37]
    assert mpi["target"].endswith("ProcessGroupMPI.cpp.o")
    print(f"canary: {canary['canary']['wall']:.0f} s wall, {canary['canary']['cpu']:.0f} s CPU")


def test_c10_cuda_and_the_aten_sample_build_in_the_same_tree(canary: dict, real: Real) -> None:
    tree = real.tree()
    done = subprocess.run(["ninja", "-C", str(tree), "c10_cuda"], capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:]
    assert list(tree.rglob("libc10_cuda.so"))
    outputs = subprocess.run(["ninja", "-C", str(tree), "-t", "targets", "all"], capture_output=True, text=True,
                             check=True).stdout
    for suffix in ATEN_SAMPLE:
        target = next(line.split(":")[0] for line in outputs.splitlines() if line.split(":")[0].endswith(suffix))
        subprocess.run(["ninja", "-C", str(tree), target], check=True, capture_output=True, timeout=1500)
        kernels = Kernels.from_entries(scan_elf(tree / target))
        assert 37 in kernels.sass, (target, kernels)


def test_an_mpi_cmake_cannot_find_is_caught(canary: dict, real: Real, tmp_path: Path) -> None:
    blind = tmp_path / RECIPE.name
    blind.write_text(RECIPE.read_text().replace('USE_DISTRIBUTED = "1"',
                                                'USE_DISTRIBUTED = "1", CMAKE_DISABLE_FIND_PACKAGE_MPI = "TRUE"'))
    done = real.run("--canary", recipe=blind, work="work-mpi")
    assert done.returncode == 5, done.stderr[-4000:]
    assert "error: canary: USE_MPI: the plan has ON, CMake has OFF" in done.stderr


def test_a_cudnn_the_plan_did_not_provision_is_caught(
    canary: dict, real: Real, tmp_path: Path, cuda118_home: Path
) -> None:
    """A cuDNN in the build environment's prefix, which CMake searches before the CUDNN_LIBRARY hint."""
    provisioned = Path(next(r for r in canary["canary"]["readout"] if r["key"] == "cudnn-library")["cmake"])
    stray = tmp_path / "env"
    shutil.copytree(real.env_prefix, stray, symlinks=True)
    (stray / "lib").mkdir(exist_ok=True)
    shutil.copy2(provisioned.resolve(), stray / "lib" / "libcudnn.so")
    done = Real(real.root, real.mirror, stray, cuda118_home).run("--canary", work="work-cudnn")
    assert done.returncode == 5, done.stderr[-4000:]
    assert f"error: canary: cuDNN library: the plan has {provisioned.parent}" in done.stderr
    assert f"CMake has {stray / 'lib' / 'libcudnn.so'}" in done.stderr


def test_an_arch_the_cuda_cannot_target_is_caught(canary: dict, real: Real, tmp_path: Path) -> None:
    forced = tmp_path / RECIPE.name
    forced.write_text(RECIPE.read_text().replace('arch = ["3.7"]', 'arch = ["3.0"]'))
    done = real.run("--canary", recipe=forced, work="work-sm30")
    assert done.returncode == 5, done.stderr[-4000:]
    out = done.stdout + done.stderr  # the log's last lines are the build's output, the error its last line
    assert "Unsupported gpu architecture 'compute_30'" in out
    assert "error: step canary failed (ninja exited 1)" in done.stderr
