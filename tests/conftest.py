"""Shared test fixtures: isolated srcbuild paths and access to the real tools CI installs.

A test that needs a real tool (gcc-11, the CUDA 11.8 toolkit, Open MPI) asks for it through
``require_tool``/the fixtures below: on a developer machine without it the test is skipped, in
CI (``SRCBUILD_REQUIRE_TOOLS=1``) a missing tool fails the test instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.toolchain.store import Toolchain, ToolchainStore

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def require_tool(what: str, found: object) -> None:
    """Skip (locally) or fail (in CI) when a real tool a test needs is missing."""
    if found:
        return
    message = f"{what} is not installed here (tests/setup.sh installs it)"
    if os.environ.get("SRCBUILD_REQUIRE_TOOLS") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own work dir and cache dir; no test touches the user's."""
    base = tmp_path_factory.mktemp("srcbuild")
    monkeypatch.setenv("SRCBUILD_WORK_DIR", str(base / "work"))
    monkeypatch.setenv("SRCBUILD_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("SRCBUILD_CONFIG_DIR", str(base / "config"))
    monkeypatch.delenv("SRCBUILD_TRUSTED_SIGNERS", raising=False)
    monkeypatch.delenv("SRCBUILD_SIGNING_KEY", raising=False)
    monkeypatch.delenv("SRCBUILD_RECIPES_PATH", raising=False)
    monkeypatch.delenv("SRCBUILD_MIRROR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))  # no user srcbuild.toml
    monkeypatch.delenv("SRCBUILD_CONFIG", raising=False)
    for var in ("SRCBUILD_TOOLCHAIN_DIR", "SRCBUILD_NVIDIA_MIRROR", "SRCBUILD_TOOLCHAIN_DATA"):
        monkeypatch.delenv(var, raising=False)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):  # no environment is active, whoever runs the tests
        monkeypatch.delenv(var, raising=False)
    return base


def _os_release_id() -> str:
    """``ID`` of /etc/os-release (``debian``, ``ubuntu``), or "" where there is none."""
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return ""
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return values.get("ID", "").strip().strip('"')


@pytest.fixture(scope="session")
def cuda118_home() -> Path:
    """A CUDA 11.8 toolkit (nvcc, cuobjdump): the one tests/setup.sh provisions (`srcbuild toolchain
    install cuda 11.8`: from Debian's packages on Debian, NVIDIA's archives elsewhere)."""
    provisioned = ToolchainStore(Path.home() / ".cache/srcbuild-ci/toolchains").find("cuda", "11.8")
    candidates = [
        Path(os.environ["SRCBUILD_TEST_CUDA118"]) if os.environ.get("SRCBUILD_TEST_CUDA118") else None,
        provisioned.prefix if provisioned is not None else None,
        Path.home() / ".cache/srcbuild-ci/toolchains/cuda-11.8-debian",
        Path.home() / ".cache/srcbuild-ci/cuda-11.8",
        Path("/opt/srcbuild-ci/cuda-11.8"),
    ]
    home = next(
        (c for c in candidates if c is not None and (c / "bin" / "nvcc").exists()), candidates[0] or candidates[2]
    )
    require_tool("the CUDA 11.8 toolkit", (home / "bin" / "nvcc").exists())
    return home


@pytest.fixture(scope="session")
def cuda13_home() -> Path:
    """A CUDA 13 toolkit (sm_75 and newer): the nvcc tests/setup.sh lays out from NVIDIA's component
    wheels in ~/.cache/srcbuild-ci/cuda-13.0, else /usr/local/cuda when that is CUDA 13."""
    candidates = [Path.home() / ".cache/srcbuild-ci/cuda-13.0", Path("/usr/local/cuda")]
    home = next((c for c in candidates if _nvcc_release(c / "bin" / "nvcc").startswith("13.")), None)
    require_tool("a CUDA 13 nvcc", home)
    return home  # type: ignore[return-value]


def _nvcc_release(nvcc: Path) -> str:
    """"13.0" from ``nvcc --version`` ("release 13.0, V13.0.88"), or "" where it does not run."""
    if not nvcc.exists():
        return ""
    done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"release (\d+\.\d+)", done.stdout)
    return match.group(1) if match else ""


@pytest.fixture(scope="session")
def gcc11() -> Path:
    path = shutil.which("gcc-11")
    require_tool("gcc-11", path)
    return Path(path)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def mpicc() -> Path:
    path = shutil.which("mpicc")
    require_tool("Open MPI (mpicc)", path)
    return Path(path)  # type: ignore[arg-type]


# Session fixtures that provision something large for real, each made once per pytest session:
# under pytest-xdist (`-n 2 --dist loadgroup`, as CI runs) the tests that use one share a worker,
# or each worker would download and unpack it again.
ONE_WORKER_FIXTURES = ("debian_cuda118",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in ONE_WORKER_FIXTURES:
            if name in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(name))


@pytest.fixture(scope="session")
def debian_cuda118(tmp_path_factory: pytest.TempPathFactory) -> Toolchain:
    """CUDA 11.8 provisioned for real by the `debian` provider into a fresh toolchains directory.

    The private apt configuration reads the mirror this machine's apt uses; /etc/apt is checked to
    be unchanged afterwards.
    """
    from srcbuild.paths import Paths
    from srcbuild.toolchain.providers.apt import configured_mirror
    from srcbuild.toolchain.providers.base import Request
    from srcbuild.toolchain.provision import provision
    from srcbuild.toolchain.session import open_session

    system = _os_release_id()
    if system != "debian":  # Ubuntu's mirrors carry no bookworm: the route is Debian's only
        pytest.skip(f"the Debian route provisions from a Debian mirror; this machine is {system or 'unknown'}")
    require_tool("apt-get and dpkg-deb", shutil.which("apt-get") and shutil.which("dpkg-deb"))
    require_tool("a Debian mirror in /etc/apt", configured_mirror())
    base = tmp_path_factory.mktemp("debian-cuda118")
    paths = Paths.resolve(work_dir=base / "work", environ={})
    apt_state = sorted((str(p), p.stat().st_mtime) for p in Path("/etc/apt").rglob("*") if p.is_file())
    session = open_session(paths, environ=dict(os.environ))
    outcome = provision(Request("cuda", "11.8"), session.facts, session.store, session.ctx, "debian")
    assert sorted((str(p), p.stat().st_mtime) for p in Path("/etc/apt").rglob("*") if p.is_file()) == apt_state
    assert not outcome.reused and outcome.toolchain.prefix == paths.toolchain_dir / "cuda-11.8-debian"
    return outcome.toolchain


# What srcbuild ships and the docs: no test may change them (a test that ran a command writing
# srcbuild's own tables, or a recipe, would pass and leave the tree modified for the next run).
SHIPPED = ("srcbuild", "recipes", "patches", "docs", "README.md")


def _shipped_state() -> dict[str, tuple[int, int]]:
    """Each shipped file's size and mtime (bytecode caches left out: Python writes them)."""
    state: dict[str, tuple[int, int]] = {}
    for name in SHIPPED:
        top = REPO_ROOT / name
        paths = [top] if top.is_file() else [p for p in top.rglob("*") if "__pycache__" not in p.parts]
        for path in paths:
            if path.is_file():
                st = path.stat()
                state[str(path.relative_to(REPO_ROOT))] = (st.st_size, st.st_mtime_ns)
    return state


@pytest.fixture(scope="session", autouse=True)
def shipped_files_unchanged() -> Iterator[None]:
    """Fails the session's last test where any test changed a file srcbuild ships."""
    before = _shipped_state()
    yield
    after = _shipped_state()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"tests changed shipped files: {', '.join(changed)}"
