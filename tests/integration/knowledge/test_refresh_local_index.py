"""``srcbuild knowledge refresh`` against a package index the test makes (a ``file://`` simple
index, pinned through PIP_INDEX_URL with pip's configuration files switched off): a CUDA release
newer than the tables is found, its wheels are downloaded (sha256 from the index), its ptxas is
run, and its row lands in a copy of the data files; a second dry run finds nothing new."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from srcbuild import tables
from srcbuild.cli import main
from srcbuild.paths import Paths

pytestmark = pytest.mark.integration

PTXAS = """#!/bin/sh
cat <<'HELP'
--gpu-name <gpu name>                               (-arch)
        Specify name of NVIDIA GPU to generate code for.
        Allowed values for this option:  'compute_100','compute_75','compute_140',
        'lto_75','sm_100','sm_100f','sm_140','sm_140a','sm_75'.
        Default value:  'sm_75'.

HELP
"""
HOST_CONFIG = "#if defined(__GNUC__)\n#if __GNUC__ > 17\n#error -- unsupported GNU version!\n#endif\n#endif\n"
VERSION = "13.9.1"


def make_wheel(
    directory: Path, project: str, members: dict[str, tuple[str, int]], version: str = VERSION, requires: str = ""
) -> Path:
    """A wheel of ``project`` at ``version`` for linux x86_64 holding ``members`` (text, mode)."""
    dist = project.replace("-", "_")
    name = directory / f"{dist}-{version}-py3-none-manylinux2014_x86_64.whl"
    info = f"{dist}-{version}.dist-info"
    files = {
        **members,
        f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n{requires}", 0o644),
        f"{info}/WHEEL": ("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-manylinux2014_x86_64\n", 0o644),
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(name, "w") as zf:
        for path, (text, mode) in {**files, f"{info}/RECORD": (record, 0o644)}.items():
            entry = zipfile.ZipInfo(path)
            entry.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(entry, text)
    return name


def make_index(root: Path) -> str:
    """A PEP 503 simple index with one nvcc and one crt wheel of VERSION; its URL."""
    files = root / "files"
    files.mkdir(parents=True)
    wheels = {
        "nvidia-cuda-nvcc": make_wheel(files, "nvidia-cuda-nvcc", {"nvidia/cu13/bin/ptxas": (PTXAS, 0o755)}),
        "nvidia-cuda-crt": make_wheel(
            files, "nvidia-cuda-crt", {"nvidia/cu13/include/crt/host_config.h": (HOST_CONFIG, 0o644)}
        ),
        "torchvision": make_wheel(
            files, "torchvision", {}, "0.30.0", "Requires-Python: >=3.11\nRequires-Dist: torch==2.15.0\n"
        ),
    }
    for project, wheel in wheels.items():
        page = root / "simple" / project
        page.mkdir(parents=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (page / "index.html").write_text(f'<a href="{wheel.as_uri()}#sha256={digest}">{wheel.name}</a>\n')
    return (root / "simple").as_uri()


def refresh(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["knowledge", "refresh", *argv])
    return code, out.getvalue()


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the made ptxas wheel is tagged x86_64")
def test_refresh_finds_a_newer_cuda_on_a_pinned_local_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", make_index(tmp_path / "index"))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    data = tmp_path / "data"
    shutil.copytree(tables.DATA_DIR, data)

    code, out = refresh("--dry-run", "--json", "--data-dir", str(data))
    assert code == 0
    found = json.loads(out)
    new, vision = sorted(found["new"], key=lambda n: n["project"] != "nvidia-cuda-nvcc")
    assert (vision["project"], vision["release"], vision["read"]) == ("torchvision", "0.30.0", [])
    assert (new["project"], new["release"], new["versions"], new["gaps"]) == (
        "nvidia-cuda-nvcc", "13.9", [VERSION], ["min_driver"]
    )
    assert [w["filename"] for w in new["read"]] == [
        f"nvidia_cuda_nvcc-{VERSION}-py3-none-manylinux2014_x86_64.whl",
        f"nvidia_cuda_crt-{VERSION}-py3-none-manylinux2014_x86_64.whl",
    ]
    assert found["download_bytes"] == sum(w["size"] for w in new["read"]) > 0  # METADATA is read in place
    assert found["newest"]["nvidia-cuda-nvcc"] == VERSION
    assert (data / "cuda.toml").read_text() == (tables.DATA_DIR / "cuda.toml").read_text()  # a dry run writes nothing

    code, out = refresh("--data-dir", str(data))
    assert code == 0, out
    work = Paths.resolve(environ=os.environ).work_dir
    assert not list(work.glob("refresh-*"))  # the wheels read are not kept without --dest
    assert '+version = "13.9"' in out and '+sass = "75 100 100f 140 140a"' in out
    assert "gap: nvidia-cuda-nvcc 13.9: sm_140: compute capability 14.0 is not in capabilities.toml" in out
    row = tables.read_data_file(data / "cuda.toml", shipped=False)["cuda"][-1]
    assert (row["version"], row["sass"], row["ptx"], row["max_gcc"], row["gaps"]) == (
        "13.9", "75 100 100f 140 140a", "75 100 140", 17, ["min_driver"]
    )
    assert row["min_gcc"] == 6 and "min_gcc as CUDA 13.5" in row["source"]
    assert row["targets"].startswith(f"binary: nvidia_cuda_nvcc-{VERSION}-py3-none-manylinux2014_x86_64.whl sha256:")
    assert "read: torchvision 0.30.0: Requires-Dist torch==2.15.0" in out
    assert "read: torchvision 0.30.0: wheels for py3" in out
    torch_row = tables.read_data_file(data / "torch.toml", shipped=False)["torch"]
    (row_215,) = [r for r in torch_row if r["version"] == "2.15"]
    assert row_215["torchvision"]["2.15.0"] == ["0.29.2", "0.30.0"]
    record = tables.read_data_file(data / "index.toml", shipped=False)
    assert {"name": "nvidia-cuda-nvcc", "newest": VERSION} in record["project"]

    code, out = refresh("--dry-run", "--data-dir", str(data))
    assert code == 0 and out.startswith("Nothing new")
