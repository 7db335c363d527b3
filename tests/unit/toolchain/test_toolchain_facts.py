"""The sourced data: every row has its checksum and source; routes per version; extra data dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.errors import HostError, UsageError
from srcbuild.toolchain.data_files import load_facts
from srcbuild.toolchain.download import Artifact, mirrored_url
from srcbuild.toolchain.providers import offers_for, provider_by_name
from srcbuild.toolchain.providers.apt import PrivateApt, mirror_from
from srcbuild.toolchain.providers.base import Request
from srcbuild.toolchain.providers.nccl import nvcc_gencode
from srcbuild.toolchain.provision import choose


def test_every_download_in_the_data_has_a_sha256_and_a_source() -> None:
    facts = load_facts({})
    for runfile in facts.runfiles:
        assert len(runfile.sha256) == 64 and runfile.source, runfile
    for redist in facts.redists:
        assert redist.source and all(len(c.sha256) == 64 and c.size > 0 for c in redist.components)
    for archive in facts.cudnn:
        assert len(archive.sha256) == 64 and archive.source, archive
    for route in facts.debian:
        assert route.source and all(len(w.sha256) == 64 for w in route.wheels)


def test_which_provider_serves_which_cuda() -> None:
    facts = load_facts({})
    assert choose(Request("cuda", "9.2"), facts).provider == "runfile"
    assert choose(Request("cuda", "10.2"), facts).provider == "runfile"
    assert choose(Request("cuda", "11.8"), facts).provider == "redist"
    offer = choose(Request("cudnn", "7.6", cuda="9.2"), facts)
    assert (offer.provider, offer.version) == ("nvidia", "7.6.5.32-cuda9.2")
    from_index = choose(Request("cudnn", "8.5", cuda="11.8"), facts)  # the package index comes first
    assert (from_index.provider, from_index.version) == ("pypi", "8.5.0.96-cuda11")
    assert from_index.origin == "nvidia-cudnn-cu11==8.5.0.96 from the package index"
    assert choose(Request("cudnn", "8.5", cuda="11.8"), facts, only="nvidia").origin.endswith("_cuda11-archive.tar.xz")
    cudnn910 = choose(Request("cudnn", "9.10", cuda="12.6"), facts)  # the package index first here too
    assert (cudnn910.version, cudnn910.describe()) == ("9.10.2.21-cuda12", "cuDNN 9.10 (pypi, 674.0 MiB)")
    assert cudnn910.origin == "nvidia-cudnn-cu12==9.10.2.21 from the package index"
    archive = choose(Request("cudnn", "9.10", cuda="12.6"), facts, only="nvidia")
    assert (archive.version, archive.describe()) == ("9.10.2.21-cuda12", "cuDNN 9.10 (nvidia, 956.7 MiB)")
    assert archive.origin.endswith("/cudnn-linux-x86_64-9.10.2.21_cuda12-archive.tar.xz")
    assert choose(Request("gcc", "7"), facts).origin == "conda-forge: gcc_linux-64 7.* gxx_linux-64 7.*"
    conda = choose(Request("cuda", "12.6"), facts, only="conda")
    assert (conda.name, conda.version, conda.size) == ("cuda", "12.6", None)
    assert conda.origin.startswith("nvidia: cuda-nvcc 12.6.* cuda-cudart-dev 12.6.* cuda-libraries-dev 12.6.*")
    assert offers_for(Request("cuda", "12.7"), facts, only="conda") == []  # NVIDIA published no 12.7
    redist = choose(Request("cuda", "11.8"), facts)
    assert redist.size is not None and 1_000_000_000 < redist.size < 1_500_000_000
    assert redist.describe() == "CUDA 11.8 (redist, 1.2 GiB)"


def test_the_cuda_12_cudnn_wheel_runs_on_maxwell_pascal_and_volta() -> None:
    from srcbuild.capability import ComputeCapability
    from srcbuild.verify.kernels import Kernels, covers

    facts = load_facts({})
    wheel = facts.index_wheel_for("cudnn", "9.10", "12.6")
    assert wheel is not None
    assert (wheel.version, wheel.cuda, wheel.requirement) == ("9.10.2.21", "12", "nvidia-cudnn-cu12==9.10.2.21")
    assert wheel.filename == "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl"
    assert len(wheel.sha256) == 64 and wheel.size == 706758467 and wheel.source == "index; read"
    assert {"5.0", "6.0", "6.1", "7.0"} <= set(wheel.sass) and wheel.ptx == ("12.0",)
    kernels = Kernels(
        frozenset(ComputeCapability.parse(a).sm for a in wheel.sass),
        frozenset(ComputeCapability.parse(a).sm for a in wheel.ptx),
    )
    assert all(covers(kernels, ComputeCapability.parse(cc)) for cc in ("5.0", "5.2", "6.0", "6.1", "7.0"))
    assert not covers(kernels, ComputeCapability.parse("3.7"))  # Kepler: cuDNN 8.5 for CUDA 11
    assert facts.index_wheel_for("cudnn", "9.10", "11.8") is None
    assert facts.index_wheel_for("cudnn", "9.1", "12.6") is None  # 9.1 is pinned for CUDA 11 only
    assert facts.index_wheel_for("nccl", "2.14", "12.6") is None  # no NCCL for CUDA 12: no recipe asks


def test_what_the_data_cannot_serve_is_said_plainly() -> None:
    facts = load_facts({})
    with pytest.raises(HostError) as err:
        choose(Request("cuda", "8.0"), facts)
    assert err.value.message == (
        "CUDA 8.0: srcbuild's data has no way to provision it with any provider (providers for cuda: redist, "
        "runfile, debian, conda)"
    )
    with pytest.raises(UsageError, match="valid: redist, runfile, debian, pypi, nvidia, conda, source"):
        provider_by_name("apt")
    assert offers_for(Request("cuda", "9.2"), facts, only="redist") == []


def test_a_data_directory_adds_rows_first(tmp_path: Path) -> None:
    (tmp_path / "cuda_runfile.toml").write_text(
        '[[runfile]]\nversion = "11.8.89"\nurl = "https://developer.download.nvidia.com/x/cuda_11.8_linux.run"\n'
        'sha256 = "' + "0" * 64 + '"\npath_flag = "--toolkitpath"\nsize = 10\nsource = "test"\n'
    )
    facts = load_facts({"SRCBUILD_TOOLCHAIN_DATA": str(tmp_path)})
    runfile = facts.runfile_for("11.8")
    assert runfile is not None and runfile.size == 10
    assert facts.runfile_for("9.2") is not None  # built-in rows are still there


def test_mirror_and_apt_sources() -> None:
    url = "https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvcc/x.tar.xz"
    assert mirrored_url(url, "http://127.0.0.1:9/nv/") == "http://127.0.0.1:9/nv/compute/cuda/redist/cuda_nvcc/x.tar.xz"
    assert mirrored_url("https://github.com/NVIDIA/nccl.git", "http://m/") == "https://github.com/NVIDIA/nccl.git"
    assert Artifact(url, None).file_name == "x.tar.xz"
    deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\nURIs: http://mirror.example/debian-security\n"
    assert mirror_from([("debian.sources", deb822)]) == "http://mirror.example/debian"
    legacy = (
        "deb http://security.example/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://m.example/debian bookworm main\n"
    )
    assert mirror_from([("sources.list", legacy)]) == "http://m.example/debian"
    apt = PrivateApt(Path("/x"), "http://m.example/debian", "bookworm", ("main", "non-free"), "/k.gpg")
    assert apt.sources_line == "deb [signed-by=/k.gpg] http://m.example/debian bookworm main non-free\n"
    assert apt.update_argv()[:3] == ["apt-get", "-o", "Dir::Etc::SourceList=/x/etc/sources.list"]


def test_nccl_gencode_names_exactly_the_archs() -> None:
    assert nvcc_gencode(("3.0", "3.5")) == "-gencode=arch=compute_30,code=sm_30 -gencode=arch=compute_35,code=sm_35"


def test_the_nvidia_mirror_comes_from_the_option_the_variable_or_the_config(tmp_path: Path) -> None:
    from srcbuild.paths import Paths
    from srcbuild.toolchain.session import open_session

    (tmp_path / "toolchain.toml").write_text('nvidia_mirror = "http://config.example/nv/"\n')
    env = {"SRCBUILD_CONFIG_DIR": str(tmp_path), "SRCBUILD_WORK_DIR": str(tmp_path / "w")}
    paths = Paths.resolve(environ=env)
    assert open_session(paths, environ=env).ctx.downloader.mirror == "http://config.example/nv/"
    env["SRCBUILD_NVIDIA_MIRROR"] = "http://env.example/"
    assert open_session(paths, environ=env).ctx.downloader.mirror == "http://env.example/"
    assert open_session(paths, environ=env, mirror="http://cli.example/").ctx.downloader.mirror == "http://cli.example/"
    (tmp_path / "toolchain.toml").write_text("nvidia_mirror = 3\n")
    with pytest.raises(UsageError, match="nvidia_mirror must be a URL string"):
        open_session(paths, environ={"SRCBUILD_CONFIG_DIR": str(tmp_path)})


def test_progress_prints_plain_lines_every_ten_percent() -> None:
    import io

    from srcbuild.toolchain.download import Progress

    out = io.StringIO()
    progress = Progress(out, "cuda.run", 1024, 0)
    for done in range(0, 1025, 32):
        progress.update(done)
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0].startswith("cuda.run: 128 B of 1.0 KiB (12%), ") and "/s, ETA " in lines[0]
    assert lines[-1].startswith("cuda.run: 1.0 KiB of 1.0 KiB (100%)")


def test_a_slow_download_prints_a_line_every_few_seconds_in_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from srcbuild.toolchain import download

    now = [100.0]
    monkeypatch.setattr(download.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    progress = download.Progress(out, "cuda.run", 10 * 1024 * 1024, 0)
    for _ in range(6):  # 6 KiB every 2 s: far from a tenth, but a line every 5 s
        now[0] += 2.0
        progress.update(int((now[0] - 100.0) * 3 * 1024))
    assert [line.split(" (")[0] for line in out.getvalue().splitlines()] == [
        "cuda.run: 18.0 KiB of 10.0 MiB",
        "cuda.run: 36.0 KiB of 10.0 MiB",
    ]
    unknown = download.Progress(out := io.StringIO(), "x.tar", None, 0)
    now[0] += 6.0
    unknown.update(1024)
    assert out.getvalue().startswith("x.tar: 1.0 KiB, ")


def test_a_preferred_provider_order_comes_first() -> None:
    from srcbuild.toolchain.providers import provider_order

    facts = load_facts({})
    prefer = provider_order({"SRCBUILD_TOOLCHAIN_PROVIDERS": "debian, redist"})
    assert prefer == ("debian", "redist")
    assert [o.provider for o in offers_for(Request("cudnn", "7.6", cuda="9.2"), facts, prefer=prefer)] == ["nvidia"]
    assert choose(Request("cuda", "9.2"), facts, prefer=prefer).provider == "runfile"  # debian has no 9.2
    with pytest.raises(UsageError, match="SRCBUILD_TOOLCHAIN_PROVIDERS: no provider named apt"):
        provider_order({"SRCBUILD_TOOLCHAIN_PROVIDERS": "apt"})
