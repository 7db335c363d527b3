"""The mirror's package index (PEP 503 pages with hashes), the pip download it runs, an sdist's
build requirements, and the Debian index files apt checks the packages against."""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

from srcbuild.mirror.debian import parse_print_uris, release_sha256
from srcbuild.mirror.manifest import Entry
from srcbuild.mirror.pypi import PipSet, build_requirements, download_argv, index_pypi, project_of


def test_each_file_belongs_to_its_normalized_project() -> None:
    assert project_of("PyYAML-6.0.1-cp38-cp38-manylinux_2_17_x86_64.whl") == "pyyaml"
    assert project_of("torch_scatter-2.1.2.tar.gz") == "torch-scatter"
    assert project_of("typing_extensions-4.8.0-py3-none-any.whl") == "typing-extensions"
    assert project_of("index.html") is None


def test_the_pages_link_every_file_with_its_sha256(tmp_path: Path) -> None:
    files = {
        "pypi/simple/torch-scatter/torch_scatter-2.1.2.tar.gz": Entry("a" * 64, 10, "x"),
        "pypi/simple/numpy/numpy-1.24.4-cp38-cp38-manylinux_2_17_x86_64.whl": Entry("b" * 64, 20, "y"),
        "pypi/simple/numpy/index.html": Entry("c" * 64, 1, "simple index"),  # an old page is not a file
    }
    written = index_pypi(tmp_path, files)
    assert sorted(written) == [
        "pypi/simple/index.html",
        "pypi/simple/numpy/index.html",
        "pypi/simple/torch-scatter/index.html",
    ]
    page = (tmp_path / "pypi/simple/torch-scatter/index.html").read_text()
    assert f'<a href="torch_scatter-2.1.2.tar.gz#sha256={"a" * 64}">torch_scatter-2.1.2.tar.gz</a>' in page
    assert "index.html" not in (tmp_path / "pypi/simple/numpy/index.html").read_text()
    assert '<a href="numpy/">numpy</a>' in (tmp_path / "pypi/simple/index.html").read_text()


def test_pip_download_takes_wheels_for_another_python_and_checks_pinned_hashes(tmp_path: Path) -> None:
    host = f"{sys.version_info[0]}.{sys.version_info[1]}"
    plain = download_argv(PipSet(("numpy<2",), python=host), tmp_path / "r.txt", tmp_path / "d")
    assert "--python-version" not in plain and "--only-binary=:all:" not in plain
    other = download_argv(PipSet(("numpy<2",), python="2.7"), tmp_path / "r.txt", tmp_path / "d")
    assert other[other.index("--python-version") + 1] == "2.7" and "--only-binary=:all:" in other
    hashed = download_argv(PipSet(("x==1 --hash=sha256:" + "0" * 64,), hashed=True), tmp_path / "r.txt", tmp_path)
    assert {"--no-deps", "--require-hashes"} <= set(hashed)


def test_pip_download_for_another_machine_names_its_python_and_platforms(tmp_path: Path) -> None:
    platforms = ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
    argv = download_argv(PipSet(("numpy<2",), python="3.8", platforms=platforms), tmp_path / "r.txt", tmp_path)
    assert argv[argv.index("--python-version") + 1] == "3.8" and "--only-binary=:all:" in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"] == list(platforms)
    hashed = PipSet(("x==1 --hash=sha256:" + "0" * 64,), hashed=True, platforms=platforms)
    assert download_argv(hashed, tmp_path / "r.txt", tmp_path).count("--only-binary=:all:") == 1
    assert PipSet((), python="3.8", platforms=platforms).describe_target() == "Python 3.8 on manylinux_2_17_x86_64"


def _sdist(path: Path, pyproject: str | None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (("pkg-1.0/setup.py", "pass\n"), ("pkg-1.0/pyproject.toml", pyproject)):
            if text is None:
                continue
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_sdists_build_requirements_leave_torch_out(tmp_path: Path) -> None:
    toml = '[build-system]\nrequires = ["setuptools>=61", "wheel", "torch>=2.0", "ninja"]\n'
    assert build_requirements(_sdist(tmp_path / "pkg-1.0.tar.gz", toml)) == ("setuptools>=61", "wheel", "ninja")
    assert build_requirements(_sdist(tmp_path / "pkg-0.9.tar.gz", None)) == ()
    assert build_requirements(_sdist(tmp_path / "pkg-0.8.tar.gz", "not toml [")) == ()


def test_the_release_file_states_each_index_files_sha256() -> None:
    text = (
        "Codename: bookworm\nMD5Sum:\n 0ed6d4c8891eb86358b94bb35d9e4da4  1484322 contrib/Contents-all\n"
        "SHA256:\n d433c1  620520 non-free/binary-amd64/Packages\n 8aacd1  101504 non-free/binary-amd64/Packages.xz\n"
    )
    assert release_sha256(text) == {
        "non-free/binary-amd64/Packages": ("d433c1", 620520),
        "non-free/binary-amd64/Packages.xz": ("8aacd1", 101504),
    }


def test_apt_names_each_package_with_its_pool_path_and_sha256() -> None:
    line = (
        "'http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/libnvvm4_11.8.89%7e11.8.0-5%7edeb12u1_"
        "amd64.deb' libnvvm4_11.8.89~11.8.0-5~deb12u1_amd64.deb 8186340 SHA256:" + "3" * 64
    )
    ((url, name, size, sha),) = parse_print_uris("Reading package lists...\n" + line + "\n")
    assert url.endswith("libnvvm4_11.8.89%7e11.8.0-5%7edeb12u1_amd64.deb") and name.startswith("libnvvm4_")
    assert (size, sha) == (8186340, "3" * 64)
