"""The mirror's package index: a recipe's ``[env] pip`` requirements (with their dependencies), an
extension's sdist and its build requirements, gathered from a loopback static simple index; then,
with the index gone and no network at all (``unshare -rn``), the venv backend installs the
environment from the mirror alone, ``srcbuild ext``'s sdist lookup finds the sdist there with its
sha256, and a piece the mirror lacks fails at once with one line and the command that adds it."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.mirror.create import Target, create_mirror
from srcbuild.mirror.gather import Needs
from srcbuild.mirror.pypi import PipSet
from srcbuild.sources.mirrors import MirrorRules
from tests.conftest import require_tool
from tests.integration.execute.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

HOST_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
HOST_CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TORCH_PLATFORM = "manylinux_2_17_x86_64.manylinux2014_x86_64"
TORCH_WHEEL = f"torch-2.0.1-{HOST_CP}-{HOST_CP}-{TORCH_PLATFORM}.whl"


def make_wheel(
    directory: Path, name: str, version: str, requires: tuple[str, ...] = (), tag: str = "py3-none-any"
) -> Path:
    """A wheel with its dependencies in METADATA (no build backend, no network); ``tag`` names the
    Python, ABI and platform it claims (its files are Python alone: pip download reads the name)."""
    import base64

    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        f"{name}/__init__.py": f"GREETING = 'hello from {name} {version}'\n".encode(),
        f"{dist}/METADATA": meta.encode(),
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: true\nTag: {tag}\n".encode(),
    }
    record = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
    return path


def make_sdist(directory: Path, name: str, version: str, build_requires: tuple[str, ...]) -> Path:
    listed = ", ".join(f'"{r}"' for r in build_requires)
    members = {
        f"{name}-{version}/setup.py": b"from setuptools import setup\nsetup()\n",
        f"{name}-{version}/pyproject.toml": f"[build-system]\nrequires = [{listed}]\n".encode(),
    }
    path = directory / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def static_index(root: Path, files: list[Path]) -> Path:
    """A PEP 503 simple index of ``files`` under ``root/simple``, with ``#sha256=`` links."""
    from packaging.utils import canonicalize_name

    for path in files:
        project = canonicalize_name(path.name.split("-")[0])
        page_dir = root / "simple" / project
        page_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, page_dir / path.name)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        with open(page_dir / "index.html", "a") as page:
            page.write(f'<a href="{path.name}#sha256={digest}">{path.name}</a><br>\n')
    return root / "simple"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def loopback_index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The loopback index: greet (needs dep), dep, the build requirement and the extension's sdist."""
    dist = tmp_path / "dist"
    files = [
        make_wheel(dist, "srcbuild_demo_greet", "1.0", ("srcbuild-demo-dep>=1",)),
        make_wheel(dist, "srcbuild_demo_dep", "1.2"),
        make_wheel(dist, "srcbuild_demo_build", "3.0"),
        # a stand-in for srcbuild ext --torch 2.0.1, named for this Python on glibc 2.17 as PyTorch's are
        make_wheel(dist, "torch", "2.0.1", ("srcbuild-demo-dep",), tag=f"{HOST_CP}-{HOST_CP}-{TORCH_PLATFORM}"),
        make_sdist(dist, "srcbuild_demo_ext", "0.5", ("srcbuild-demo-build==3.0", "torch>=2")),
    ]
    served = tmp_path / "index"
    static_index(served, files)
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", served
    finally:
        server.shutdown()
        server.server_close()


RECIPE = """\
name = "pip-demo"
[torch]
tag = "v1.7.1"
[toolchain]
python = "{python}"
gcc = "11"
cuda = "none"
"""

OFFLINE_SCRIPT = """
import json, sys
from pathlib import Path
from srcbuild.envs.backends.base import CommandIO
from srcbuild.envs.backends.venv_backend import VenvBackend
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import MirrorMissing
from srcbuild.ext.fetch import fetch_torch, index_torch
from srcbuild.ext.run import _find_sdist
from srcbuild.ext.source import parse_requirement
from srcbuild.mirror.layout import mirror_dir_settings
mirror, envs, python = sys.argv[1:4]
environ = {"PATH": "/usr/bin:/bin", **mirror_dir_settings(mirror, [])}
out = {}
env = VenvBackend().ensure(EnvSpec(python=python, pip=("srcbuild-demo-greet==1.0",)), Path(envs), None, None,
                           CommandIO(environ))
out["python"] = str(env.python)
sdist = _find_sdist(parse_requirement("srcbuild-demo-ext==0.5"), environ)
out["sdist"] = [sdist.filename, sdist.sha256, sdist.url]
out["torch"] = str(fetch_torch(index_torch("2.0.1", python, Path(envs) / "torch-wheels", environ), environ))
for name, call in (
    ("env", lambda: VenvBackend().ensure(EnvSpec(python=python, pip=("srcbuild-demo-greet==2.0",)), Path(envs),
                                         None, None, CommandIO(environ))),
    ("ext", lambda: _find_sdist(parse_requirement("srcbuild-demo-ext==0.6"), environ)),
):
    try:
        call()
    except MirrorMissing as exc:
        out[name] = [exc.message, exc.details]
print(json.dumps(out))
"""


def test_pip_packages_and_an_extension_sdist_come_from_the_mirror_alone(
    loopback_index: tuple[str, Path], tmp_path: Path
) -> None:
    can_unshare = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can_unshare)
    url, served = loopback_index
    recipe = tmp_path / "pip-demo.toml"
    recipe.write_text(RECIPE.format(python=HOST_PYTHON))
    pip_env = {"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": "/dev/null", "PIP_FIND_LINKS": "", "PIP_NO_INDEX": "0"}
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"),
        **pip_env,
    }
    mirror = tmp_path / "mirror"
    argv = [sys.executable, "-m", "srcbuild", "mirror", "create", str(mirror), "--recipe", str(recipe)]
    argv += ["--package", "ext", "--ext", "srcbuild-demo-ext==0.5", "--torch", "2.0.1", "--skip", "gcc", "--no-env"]
    dry = subprocess.run([*argv, "--dry-run"], env=env, cwd=REPO_ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "pip (an extension's sdist): srcbuild-demo-ext==0.5" in dry.stdout
    assert "pip (torch 2.0.1 for srcbuild ext --torch 2.0.1): torch==2.0.1" in dry.stdout
    made = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stdout + made.stderr
    # the build environment's pip requirements, as mirror create gathers them for a venv
    target = Target("pip-demo", ("ext",), Needs((), (), (), ()), pip=(PipSet(("srcbuild-demo-greet==1.0",)),))
    report = create_mirror(mirror, [target], MirrorRules(), {**env, "PATH": os.environ["PATH"]})
    assert report.sizes["pypi"] > 0
    files = json.loads((mirror / "manifest.json").read_text())["files"]
    wanted = {
        "pypi/simple/srcbuild-demo-greet/srcbuild_demo_greet-1.0-py3-none-any.whl",
        "pypi/simple/srcbuild-demo-dep/srcbuild_demo_dep-1.2-py3-none-any.whl",  # greet's dependency
        "pypi/simple/srcbuild-demo-build/srcbuild_demo_build-3.0-py3-none-any.whl",  # the sdist's build requirement
        "pypi/simple/srcbuild-demo-ext/srcbuild_demo_ext-0.5.tar.gz",
        f"pypi/simple/torch/{TORCH_WHEEL}",
        "pypi/simple/srcbuild-demo-ext/index.html",
        "pypi/simple/index.html",
    }
    assert wanted <= set(files), sorted(files)
    assert files[f"pypi/simple/torch/{TORCH_WHEEL}"]["origin"].endswith("ext --torch 2.0.1)")
    sdist_sha = files["pypi/simple/srcbuild-demo-ext/srcbuild_demo_ext-0.5.tar.gz"]["sha256"]
    page = (mirror / "pypi/simple/srcbuild-demo-ext/index.html").read_text()
    assert f"srcbuild_demo_ext-0.5.tar.gz#sha256={sdist_sha}" in page
    verified = subprocess.run(
        [sys.executable, "-m", "srcbuild", "mirror", "verify", str(mirror)], env=env, cwd=REPO_ROOT,
        capture_output=True, text=True,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr

    shutil.rmtree(served)  # the index is gone: only the mirror is left
    copied = tmp_path / "copied"
    shutil.copytree(mirror, copied)
    offline = subprocess.run(
        ["unshare", "-rn", sys.executable, "-c", OFFLINE_SCRIPT, str(copied), str(tmp_path / "envs"), HOST_PYTHON],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert offline.returncode == 0, offline.stdout + offline.stderr
    out = json.loads(offline.stdout.strip().splitlines()[-1])
    greet = subprocess.run(
        [out["python"], "-c", "import srcbuild_demo_greet, srcbuild_demo_dep; print(srcbuild_demo_greet.GREETING)"],
        capture_output=True, text=True, check=True,
    )
    assert greet.stdout.strip() == "hello from srcbuild_demo_greet 1.0"
    assert Path(out["torch"]).name == TORCH_WHEEL
    name, sha, found = out["sdist"]
    assert (name, sha) == ("srcbuild_demo_ext-0.5.tar.gz", sdist_sha)
    assert found.startswith(copied.as_uri())
    message, details = out["env"]
    assert message == (
        f"pip install: the pip package srcbuild-demo-greet==2.0 is not in the mirror {copied}/'s package index"
    )
    assert details == {"create_options": ["--env-backend", "venv"]}
    message, details = out["ext"]
    assert message.startswith(f"the sdist of srcbuild-demo-ext==0.6 is not in the mirror {copied}/'s package index")
    assert details == {"create_options": ["--ext", "srcbuild-demo-ext==0.6"]}


def test_the_command_that_adds_a_missing_piece_carries_its_options() -> None:
    from srcbuild.cli.mirror_dir import with_details

    add = "srcbuild mirror create /srv/m --recipe r"
    assert with_details(add, {"create_options": ["--ext", "x==1"]}) == f"{add} --ext x==1"
    assert with_details(add, {"create_prefix": "SRCBUILD_TOOLCHAIN_PROVIDERS=debian"}) == (
        f"SRCBUILD_TOOLCHAIN_PROVIDERS=debian {add}"
    )
    assert with_details(add, {}) == add


def test_wheels_are_chosen_for_the_other_machines_python_and_glibc(tmp_path: Path) -> None:
    """A mirror made here (this Python, this glibc) for a machine with Python 3.8 and glibc 2.17:
    pip download's --python-version and --platform against a loopback index that has a torch for
    both and a dependency built for glibc 2.17 (1.0) and for 2.28 (2.0)."""
    dist = tmp_path / "dist"
    host = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    files = [
        make_wheel(dist, "torch", "2.0.1", ("srcbuild-demo-native",), tag="cp38-cp38-manylinux2014_x86_64"),
        make_wheel(dist, "torch", "2.0.1", ("srcbuild-demo-native",), tag=f"{host}-{host}-manylinux_2_28_x86_64"),
        make_wheel(dist, "srcbuild_demo_native", "1.0", tag="cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64"),
        make_wheel(dist, "srcbuild_demo_native", "2.0", tag="cp38-cp38-manylinux_2_28_x86_64"),
        make_wheel(dist, "srcbuild_demo_native", "2.0", tag=f"{host}-{host}-manylinux_2_28_x86_64"),
    ]
    served = tmp_path / "index"
    static_index(served, files)
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    recipe = tmp_path / "pip-demo.toml"
    recipe.write_text(RECIPE.format(python="3.8"))
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"),
        "PIP_INDEX_URL": f"http://127.0.0.1:{server.server_address[1]}/simple/",
        "PIP_CONFIG_FILE": "/dev/null",
    }

    def create(name: str, *options: str) -> set[str]:
        argv = [sys.executable, "-m", "srcbuild", "mirror", "create", str(tmp_path / name), "--recipe", str(recipe),
                "--package", "ext", "--torch", "2.0.1", "--skip", "gcc", "--no-env", *options]
        made = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        assert made.returncode == 0, made.stdout + made.stderr
        listed = json.loads((tmp_path / name / "manifest.json").read_text())["files"]
        return {rel.rsplit("/", 1)[-1] for rel in listed if rel.endswith(".whl")}

    try:
        default = create("default")  # the recipe's Python (3.8) and glibc 2.17, whatever this machine is
        named = create("named", "--python", "3.8", "--platform", "manylinux2014_x86_64")
        newer = create("newer", "--platform", "manylinux_2_28_x86_64")
        host_python = create("host", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}", "--platform",
                             "manylinux_2_28_x86_64")
        too_old = subprocess.run(
            [sys.executable, "-m", "srcbuild", "mirror", "create", str(tmp_path / "old"), "--recipe", str(recipe),
             "--package", "ext", "--torch", "2.0.1", "--skip", "gcc", "--no-env", "--platform", "manylinux1_x86_64"],
            env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        )
    finally:
        server.shutdown()
        server.server_close()
    glibc_217 = {"torch-2.0.1-cp38-cp38-manylinux2014_x86_64.whl",
                 "srcbuild_demo_native-1.0-cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"}
    assert default == named == glibc_217
    assert newer == {"torch-2.0.1-cp38-cp38-manylinux2014_x86_64.whl",
                     "srcbuild_demo_native-2.0-cp38-cp38-manylinux_2_28_x86_64.whl"}
    assert host_python == {f"torch-2.0.1-{host}-{host}-manylinux_2_28_x86_64.whl",
                           f"srcbuild_demo_native-2.0-{host}-{host}-manylinux_2_28_x86_64.whl"}
    assert too_old.returncode == 9, too_old.stdout + too_old.stderr  # not found
    hint = " ".join(too_old.stderr.split())
    assert "the wheels are chosen for Python 3.8 on manylinux_2_5_x86_64 (mirror create's --python and --platform)" \
        in hint, too_old.stderr
