"""CUDA and cuDNN from NVIDIA's layouts (redist archives, a runfile, a legacy cuDNN .tgz) served on
127.0.0.1: verified, resumed after a cut, refused when tampered, provisioned once when two ask."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from srcbuild import proc
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.provision import provision
from srcbuild.toolchain.session import open_session
from tests.worlds.nvidia_site import CUDNN_PATH, REDIST_DIR, RUNFILE_PATH, Site, SiteServer

NVCC_PATH = REDIST_DIR + "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-11.8.89-archive.tar.xz"


def _nvcc_release(home: Path) -> str:
    out = proc.probe([str(home / "bin" / "nvcc"), "--version"]) or ""
    return out.strip().splitlines()[-2] if out.strip() else ""


def _toolchains() -> Path:
    return Paths.resolve(environ=os.environ).toolchain_dir


def test_redist_archives_make_one_cuda_home(site_server: SiteServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "redist"]) == 0
    home = _toolchains() / "cuda-11.8-redist"
    assert capsys.readouterr().out.startswith("cuda 11.8 (redist, ")
    assert _nvcc_release(home) == "Cuda compilation tools, release 11.8, V11.8.89"
    assert (home / "bin" / "cuobjdump").is_file() and (home / "include" / "cuda_runtime.h").is_file()
    assert (home / "lib64" / "libcudart.so.11.0").exists()
    manifest = json.loads((home / ".srcbuild-toolchain.json").read_text())
    assert manifest["sources"][0]["url"] == site_server.url + NVCC_PATH
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "redist"]) == 0  # second time: reused
    assert "already provisioned" in capsys.readouterr().out
    assert sum(1 for path, _ in site_server.state.requests if path == NVCC_PATH) == 1


def test_runfile_installs_only_the_toolkit_into_the_prefix(site_server: SiteServer) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "runfile"]) == 0
    home = _toolchains() / "cuda-11.8-runfile"
    assert _nvcc_release(home) == "Cuda compilation tools, release 11.8, V11.8.89"
    args = (home / ".installer-args").read_text().split()
    assert args[:3] == [
        "--silent",
        "--toolkit",
        f"--toolkitpath={_toolchains() / '.tmp'}/cuda-11.8-runfile.{__import__('os').getpid()}",
    ]
    assert args[-1] == "--override" and not any(a.startswith("--driver") for a in args)


def test_legacy_cudnn_archive_becomes_a_prefix(site_server: SiteServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cudnn", "7.6", "--cuda", "11.8", "--json"]) == 0
    [made] = json.loads(capsys.readouterr().out)
    prefix = Path(made["prefix"])
    assert prefix.name == "cudnn-7.6.5.32-cuda11.8-nvidia" and made["facts"]["cudnn"] == "7.6.5"
    assert (prefix / "include" / "cudnn.h").is_file() and (prefix / "lib64" / "libcudnn.so.7.6.5").is_file()


def test_a_tampered_archive_is_refused_and_removed(site_server: SiteServer, capsys: pytest.CaptureFixture[str]) -> None:
    site_server.state.tampered.add(CUDNN_PATH)
    assert main(["toolchain", "install", "cudnn", "7.6", "--cuda", "11.8"]) == 7
    err = capsys.readouterr().err
    assert f"\nerror: {site_server.url}{CUDNN_PATH}: sha256 " in err
    assert "recorded in srcbuild's data; the file was deleted" in err
    assert not list((_toolchains() / ".downloads").glob("*cudnn*"))
    assert not [p for p in _toolchains().iterdir() if p.name.startswith("cudnn")]


def test_a_download_cut_off_half_way_resumes_with_the_rest(
    site_server: SiteServer, nvidia_site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    size = (nvidia_site.root / RUNFILE_PATH).stat().st_size
    site_server.state.cut_after[RUNFILE_PATH] = size // 2
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "runfile"]) == 4  # a resource missing
    err = capsys.readouterr().err
    assert f"error: download failed: {site_server.url}{RUNFILE_PATH}: " in err
    assert "hint: run the same command again to resume; or put the file in a directory under the same path" in err
    assert f"(DIR/{RUNFILE_PATH.lstrip('/')}) and set SRCBUILD_NVIDIA_MIRROR=DIR" in err
    first = site_server.state.sent[RUNFILE_PATH]
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "runfile"]) == 0
    second = site_server.state.sent[RUNFILE_PATH] - first
    assert first + second == size and second <= size - size // 2 + (1 << 20)
    assert site_server.state.requests[-1] == (RUNFILE_PATH, f"bytes={size - second}-")


@pytest.mark.parametrize("form", ["directory", "file-url"])
def test_a_plain_directory_or_file_url_is_a_mirror(
    form: str, nvidia_site: Site, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The layout the hint shows: NVIDIA's paths under a directory, given as is or as file:///DIR/."""
    mirror = str(nvidia_site.root) if form == "directory" else nvidia_site.root.as_uri() + "/"
    monkeypatch.setenv("SRCBUILD_NVIDIA_MIRROR", mirror)
    monkeypatch.setenv("SRCBUILD_TOOLCHAIN_DATA", str(nvidia_site.data_dir))
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "runfile"]) == 0, capsys.readouterr().err
    assert _nvcc_release(_toolchains() / "cuda-11.8-runfile") == "Cuda compilation tools, release 11.8, V11.8.89"


def test_offline_uses_only_what_is_provisioned(site_server: SiteServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toolchain", "install", "cuda", "11.8", "--from", "runfile", "--offline"]) == 4
    assert "--offline forbids downloading it from" in capsys.readouterr().err
    assert site_server.state.requests == []


def test_two_provisions_of_one_toolkit_at_once_make_it_once(site_server: SiteServer) -> None:
    site_server.state.delay = 0.05
    results: list[object] = []

    def one() -> None:
        session = open_session(Paths.resolve(environ=os.environ), environ=os.environ)
        results.append(provision(Request("cuda", "11.8"), session.facts, session.store, session.ctx, "redist"))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.reused for r in results) == [False, True]
    assert len({r.toolchain.prefix for r in results}) == 1
    assert sum(1 for path, _ in site_server.state.requests if path == NVCC_PATH) == 1


def test_install_recipe_fetches_what_the_host_lacks_and_the_build_probe_finds_it(
    site_server: SiteServer,
    tmp_path: Path,
    gcc11: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "site-k80.toml").write_text(
        'name = "site-k80"\nextends = "kepler-k80-cu118"\n[toolchain]\ncudnn = "7.6"\n'
    )
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path / "recipes"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # gcc-11 from the host; no CUDA 11.8 on this machine's paths
    assert main(["toolchain", "install", "--recipe", "site-k80"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["cuda 11.8", "cudnn 7.6.5.32-cuda11.8"]
    from srcbuild.host import probe_host
    from srcbuild.toolchain.homes import provisioned_dirs

    host = probe_host(
        environ={"PATH": "/usr/bin:/bin", "SRCBUILD_WORK_DIR": str(Paths.resolve(environ=os.environ).work_dir)},
        provisioned=provisioned_dirs,
    )
    toolkit = host.cuda_toolkit("11.8")
    assert toolkit is not None and toolkit.home == _toolchains() / "cuda-11.8-redist"
    assert toolkit.source == "srcbuild toolchain cuda-11.8-redist"
    cudnn = host.cudnn_version("7.6")
    assert (
        cudnn is not None and cudnn.header == _toolchains() / "cudnn-7.6.5.32-cuda11.8-nvidia" / "include" / "cudnn.h"
    )
    assert main(["toolchain", "install", "--recipe", "site-k80"]) == 0
    assert capsys.readouterr().out == "nothing to provision: the host has every tool the recipe pins\n"


def test_without_access_kepler_cu92_stops_at_the_first_download_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on: a machine without access
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    monkeypatch.setenv("SRCBUILD_NVIDIA_MIRROR", closed)
    monkeypatch.delenv("SRCBUILD_TOOLCHAIN_DATA", raising=False)  # the built-in data: CUDA 9.2's runfile
    assert main(["toolchain", "install", "--recipe", "kepler-cu92"]) == 4
    err = capsys.readouterr().err.splitlines()
    url = f"{closed}compute/cuda/9.2/Prod2/local_installers/cuda_9.2.148_396.37_linux"
    [line] = [e for e in err if e.startswith("error: ")]
    assert line.startswith(f"error: download failed: {url}: ")
    assert line.endswith(" (the mirror in SRCBUILD_NVIDIA_MIRROR)")
    assert not list(Paths.resolve(environ=os.environ).toolchain_dir.glob("cuda-*"))  # nothing half-made
