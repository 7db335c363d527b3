"""``--torch VERSION``: ``srcbuild plan ext`` downloads nothing and writes nothing; ``srcbuild ext``
fetches the wheel in its fetch-torch step, checks it and builds against it.

A loopback package index (the fixture extension's sdist and a stand-in torch 2.5.1 for this
CPython and platform, as PyTorch's own index names its wheels) records every request. ``plan ext``
reads the two pages it needs (the sdist's and torch's: the file names, URLs and sha256s a plan
states) and asks for no file; the work, cache and toolchain directories stay empty. The plan names
the fetch-torch step: the wheel, its URL, its sha256 and where it goes. ``ext`` then asks for the
wheel once, builds, and a second ``ext`` is a cache hit that downloads nothing again (the file is
there with its sha256). A torch the index lists with another sha256 than the file it serves is
refused with exit 7 and deleted.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging import tags
from packaging.requirements import Requirement

from tests.conftest import require_tool
from tests.integration.execute.conftest import PY, REPO_ROOT
from tests.integration.mirror.test_mirror_pip import QuietHandler, make_wheel, static_index
from tests.worlds.tiny_ext_world import publish_tiny_ext, torch_wheel

pytestmark = pytest.mark.integration

CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


class RecordingHandler(QuietHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()


def write_recipe(directory: Path) -> Path:
    gcc = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True, check=False).stdout
    path = directory / "tiny-cpu.toml"
    path.write_text(
        'name = "tiny-cpu"\n[torch]\ntag = "v2.5.1"\n'
        f'[toolchain]\npython = "{PY}"\ngcc = "{gcc.strip().split(".")[0]}"\ncuda = "none"\n'
    )
    return path


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, list[str], Path]]:
    """(index URL, the paths asked for, the served directory)."""
    require_tool("gcc", shutil.which("gcc"))
    world = publish_tiny_ext(tmp_path / "world")
    platform = next(iter(tags.platform_tags()))
    torch = torch_wheel(tmp_path / "dist", "2.5.1", f"{CP}-{CP}-{platform}")
    served = tmp_path / "index"
    static_index(served, [world.sdist, torch])
    requests: list[str] = []
    handler = functools.partial(type("H", (RecordingHandler,), {"requests": requests}), directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", requests, served
    finally:
        server.shutdown()
        server.server_close()


def stub_build_requirements(served: Path, steps: list[dict[str, Any]]) -> None:
    """Empty wheels on the index for the build environment's requirements, as the plan's environment
    step names them (setuptools aside: the venv's own is taken); the extension needs none of them."""
    (step,) = [s for s in steps if s["id"] == "environment"]
    (install,) = [line for line in step["action"]["shell"] if "-m pip install" in line]
    argv = shlex.split(install)
    wheels = []
    for text in argv[argv.index("--disable-pip-version-check") + 1:]:
        requirement = Requirement(text)
        if requirement.name != "setuptools":
            version = next(v for v in ("1.0", "3.27.0") if requirement.specifier.contains(v))
            wheels.append(make_wheel(served.parent / "stubs", requirement.name.replace("-", "_"), version))
    static_index(served, wheels)


def srcbuild(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "srcbuild", *argv], env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=600)


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*")]


def test_plan_ext_with_torch_downloads_nothing_and_ext_fetches_it(
    index: tuple[str, list[str], Path], tmp_path: Path
) -> None:
    url, requests, served = index
    recipe = write_recipe(tmp_path)
    work, cache, toolchains = tmp_path / "work", tmp_path / "cache", tmp_path / "toolchains"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SRCBUILD_"))}
    env.update({"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": "/dev/null", "SRCBUILD_WORK_DIR": str(work),
                "SRCBUILD_CACHE_DIR": str(cache), "SRCBUILD_TOOLCHAIN_DIR": str(toolchains),
                "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"), "COLUMNS": "200"})
    args = ["tiny-ext==1.0", "--recipe", str(recipe), "--torch", "2.5.1", "--env-backend", "venv"]
    torch_name = f"torch-2.5.1-{CP}-{CP}-{next(iter(tags.platform_tags()))}.whl"
    sha = hashlib.sha256((served / "simple" / "torch" / torch_name).read_bytes()).hexdigest()

    planned = srcbuild(["plan", "ext", *args], env)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert sorted(set(requests)) == ["/simple/tiny-ext/", "/simple/torch/"], requests  # pages, no file
    assert files_under(work, cache, toolchains) == []
    text = " ".join(planned.stdout.split())
    assert f"Fetch {torch_name}" in text
    # what the file name tells is checked by plan already: the extension's torch range (none known here)
    assert "srcbuild knows no torch range upstream states for tiny-ext 1.0: whether it builds against torch " \
        "2.5.1 is found out by compiling" in text
    assert f"download {url}torch/{torch_name} into {work / 'torch-wheels'} with pip (check its sha256 {sha};" in text
    assert f"{torch_name} is not downloaded by plan: its CUDA version and kernels are read when the fetch-torch " \
        "step has fetched it" in text
    as_json = srcbuild(["plan", "ext", *args, "--json"], env)
    assert as_json.returncode == 0, as_json.stderr
    steps = json.loads(as_json.stdout)["steps"]
    assert [s["id"] for s in steps][:2] == ["fetch-torch", "preflight"]
    assert steps[0]["action"]["args"] == {"url": f"{url}torch/{torch_name}", "sha256": sha,
                                          "into": str(work / "torch-wheels")}
    assert files_under(work, cache, toolchains) == []

    stub_build_requirements(served, steps)
    requests.clear()
    built = srcbuild(["ext", *args], env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert requests.count(f"/simple/torch/{torch_name}") == 1, requests
    assert (work / "torch-wheels" / torch_name).is_file()
    out = " ".join((built.stdout + built.stderr).split())
    assert "torch 2.5.1 (CPU-only; SASS for none) from the package index" in out
    wheel = Path(built.stdout.splitlines()[-1])
    assert wheel.name.startswith("tiny_ext-1.0-") and wheel.is_file()

    requests.clear()
    again = srcbuild(["ext", *args], env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "cache hit" in again.stdout + again.stderr
    assert [r for r in requests if r.endswith(".whl")] == []  # the wheel is there with its sha256

    # plan --format shell's lines for the step paste and run: pip fetches the same file, sha256sum checks it
    shell = srcbuild(["plan", "ext", *args, "--format", "shell"], env)
    assert shell.returncode == 0, shell.stderr
    lines = [line.strip() for line in shell.stdout.splitlines()]
    start = lines.index(next(line for line in lines if "-m pip download" in line))
    (work / "torch-wheels" / torch_name).unlink()
    here = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}  # python3 with pip
    pasted = subprocess.run(["bash", "-ec", "\n".join(lines[start:start + 2])], env=here, capture_output=True,
                            text=True, timeout=300)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert f"{work / 'torch-wheels' / torch_name}: OK" in pasted.stdout


def test_a_torch_wheel_unlike_its_index_sha256_is_refused_and_deleted(
    index: tuple[str, list[str], Path], tmp_path: Path
) -> None:
    url, _, served = index
    recipe = write_recipe(tmp_path)
    work = tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SRCBUILD_"))}
    env.update({"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": "/dev/null", "SRCBUILD_WORK_DIR": str(work),
                "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_CONFIG_DIR": str(tmp_path / "config")})
    (wheel,) = (served / "simple" / "torch").glob("*.whl")
    wheel.write_bytes(wheel.read_bytes() + b"\0")  # the page keeps the sha256 of the file as it was
    ran = srcbuild(["ext", "tiny-ext==1.0", "--recipe", str(recipe), "--torch", "2.5.1", "--env-backend", "venv"],
                   env)
    assert ran.returncode == 7, ran.stdout + ran.stderr
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{wheel.name} from {url}torch/{wheel.name} has sha256" in errors[0], ran.stderr
    assert not (work / "torch-wheels" / wheel.name).exists()
    assert not (work / "builds").exists()  # refused before anything was built


def test_a_torch_in_a_find_links_directory_is_planned_and_fetched_from_there(
    index: tuple[str, list[str], Path], tmp_path: Path
) -> None:
    url, requests, served = index
    links = tmp_path / "links"
    links.mkdir()
    (wheel,) = (served / "simple" / "torch").glob("*.whl")
    wheel.rename(links / wheel.name)
    (served / "simple" / "torch" / "index.html").unlink()  # the index has no torch: the directory has
    recipe = write_recipe(tmp_path)
    work = tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SRCBUILD_"))}
    env.update({"PIP_INDEX_URL": url, "PIP_FIND_LINKS": str(links), "PIP_CONFIG_FILE": "/dev/null",
                "SRCBUILD_WORK_DIR": str(work), "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"),
                "SRCBUILD_CONFIG_DIR": str(tmp_path / "config")})
    args = ["tiny-ext==1.0", "--recipe", str(recipe), "--torch", "2.5.1", "--env-backend", "venv"]
    planned = srcbuild(["plan", "ext", *args, "--json"], env)
    assert planned.returncode == 0, planned.stderr
    steps = json.loads(planned.stdout)["steps"]
    assert steps[0]["action"]["args"] == {"url": (links / wheel.name).as_uri(), "sha256": "",
                                          "into": str(work / "torch-wheels")}
    assert not work.exists()
    by_file = srcbuild(["plan", "ext", "tiny-ext==1.0", "--recipe", str(recipe), "--torch-wheel",
                        str(links / wheel.name), "--env-backend", "venv"], env)
    assert by_file.returncode == 0, by_file.stderr
    assert not work.exists()  # the wheel was read, and what was read is remembered by a build only
    stub_build_requirements(served, steps)
    built = srcbuild(["ext", *args], env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (work / "torch-wheels" / wheel.name).read_bytes() == (links / wheel.name).read_bytes()
    assert [r for r in requests if "/torch-" in r] == []  # the wheel came from the directory
    digest = hashlib.sha256(wheel_bytes := (links / wheel.name).read_bytes()).hexdigest()
    assert wheel_bytes and (work / "torch-identity" / f"{digest}.json").is_file()


def test_a_cpu_torch_for_a_cuda_recipe_is_refused_by_its_label_before_any_download(
    index: tuple[str, list[str], Path], tmp_path: Path, cuda118_home: Path, gcc11: Path
) -> None:
    url, requests, served = index
    platform = next(iter(tags.platform_tags()))
    static_index(served, [torch_wheel(tmp_path / "cpu", "2.5.1+cpu", f"{CP}-{CP}-{platform}")])
    recipe = tmp_path / "k80.toml"
    recipe.write_text('name = "k80"\n[torch]\ntag = "v2.5.1"\n'
                      f'[toolchain]\npython = "{PY}"\ngcc = "11"\ncuda = "11.8"\n[gpu]\narch = ["3.7"]\n')
    work = tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "SRCBUILD_"))}
    env.update({"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": "/dev/null", "SRCBUILD_WORK_DIR": str(work),
                "SRCBUILD_CACHE_DIR": str(tmp_path / "cache"), "SRCBUILD_CONFIG_DIR": str(tmp_path / "config")})
    args = ["tiny-ext==1.0", "--recipe", str(recipe), "--torch", "2.5.1+cpu", "--env-backend", "venv",
            "--cuda-home", str(cuda118_home), "--no-provision"]
    for command in (["plan", "ext"], ["ext"]):
        ran = srcbuild([*command, *args], env)
        assert ran.returncode == 3, ran.stdout + ran.stderr
        said = " ".join(ran.stderr.split())
        assert "recipe k80 builds CUDA 11.8 kernels for 3.7, but torch 2.5.1+cpu (by its +cpu label) is CPU-only" \
            in said, ran.stderr
    assert [r for r in requests if r.endswith(".whl")] == []
    assert not (work / "torch-wheels").exists() and not (work / "builds").exists()
