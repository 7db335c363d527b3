"""Real upstream artifacts for the real tier, fetched from the package index pip is configured with.

Each artifact is pinned by project, exact file name and sha256. It is downloaded once into
``~/.cache/srcbuild-ci/real`` (``SRCBUILD_REAL_CACHE`` overrides it), kept there between runs,
and checked against its sha256 every time it is handed out. Wheels come through
``pip download --require-hashes`` (pip's own index configuration, proxies and certificates);
sdists, which ``pip download`` would try to build, through the simple page of the index pip is
configured with. Where nothing can be fetched, the test fails in CI (SRCBUILD_REQUIRE_TOOLS=1) and
skips elsewhere, naming the artifact.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from srcbuild.simple_page import page_files
from tests.conftest import require_tool


@dataclass(frozen=True)
class Artifact:
    """One pinned file of the package index."""

    project: str
    version: str
    filename: str
    sha256: str

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


# The pins the real tier shares; a test may also pass an Artifact of its own to fetch().
TORCH_201_CU117 = Artifact(
    "torch", "2.0.1", "torch-2.0.1-cp311-cp311-manylinux1_x86_64.whl",
    "e617b1d0abaf6ced02dbb9486803abfef0d581609b09641b34fa315c9c40766d",
)
CUDNN_CU11_85 = Artifact(
    "nvidia-cudnn-cu11", "8.5.0.96", "nvidia_cudnn_cu11-8.5.0.96-2-py3-none-manylinux1_x86_64.whl",
    "402f40adfc6f418f9dae9ab402e773cfed9beae52333f6d86ae3107a1b9527e7",
)
# NCCL for CUDA 11, the one torch 2.0.1+cu117 pins (libtorch_cuda.so needs libnccl.so.2 to load)
NCCL_CU11_2143 = Artifact(
    "nvidia-nccl-cu11", "2.14.3", "nvidia_nccl_cu11-2.14.3-py3-none-manylinux1_x86_64.whl",
    "5e5534257d1284b8e825bc3a182c6f06acd6eb405e9f89d49340e98cd8f136eb",
)
# CUPTI for CUDA 11.7, the one torch 2.0.1+cu117 pins (libtorch_cpu.so needs libcupti.so.11.7)
CUPTI_CU11_117 = Artifact(
    "nvidia-cuda-cupti-cu11", "11.7.101", "nvidia_cuda_cupti_cu11-11.7.101-py3-none-manylinux1_x86_64.whl",
    "e0cfd9854e1f2edaa36ca20d21cd0bdd5dcfca4e3b9e130a082e05b33b6c5895",
)
CUDNN_CU11_91 = Artifact(
    "nvidia-cudnn-cu11", "9.1.0.70", "nvidia_cudnn_cu11-9.1.0.70-py3-none-manylinux2014_x86_64.whl",
    "e6135ac63fe9d5b0b89cfb35c3fc1c1349f2b995becadf2e9dc21bca89d9633d",
)
# cuDNN 9.10 for CUDA 12: the last cuDNN with Maxwell/Pascal/Volta kernels (the cu126 recipes' pin)
CUDNN_CU12_910 = Artifact(
    "nvidia-cudnn-cu12", "9.10.2.21", "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl",
    "949452be657fa16687d0930933f032835951ef0892b37d2d53824d1a84dc97a8",
)
NVCC_CU11_118 = Artifact(
    "nvidia-cuda-nvcc-cu11", "11.8.89", "nvidia_cuda_nvcc_cu11-11.8.89-py3-none-manylinux2014_x86_64.whl",
    "f8e1e995166c884f2f5bf94975d7abb89175363b8712f7f81cd38d0df1b2cd85",
)
# The ptxas sets of the CUDA table: 12.8 (sm_101, no sm_103) and 13.0 (sm_110, no sm_101)
NVCC_CU12_128 = Artifact(
    "nvidia-cuda-nvcc-cu12", "12.8.93",
    "nvidia_cuda_nvcc_cu12-12.8.93-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
    "2d6dc36fb7cb5ac9c0b8825bc13d193c35487a315664007287d0126531238011",
)
NVCC_130 = Artifact(
    "nvidia-cuda-nvcc", "13.0.88", "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03",
)
CRT_130 = Artifact(
    "nvidia-cuda-crt", "13.0.88", "nvidia_cuda_crt-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4",
)
TORCH_213_CPU_311 = Artifact(
    "torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
)
TORCH_SCATTER_212_SDIST = Artifact(
    "torch-scatter", "2.1.2", "torch_scatter-2.1.2.tar.gz",
    "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47",
)
TORCH_CLUSTER_163_SDIST = Artifact(
    "torch-cluster", "1.6.3", "torch_cluster-1.6.3.tar.gz",
    "78d5a930a5bbd0d8788df8c6d66addd68d6dd292fe3edb401e3dacba26308152",
)
TORCH_SPLINE_CONV_122_SDIST = Artifact(
    "torch-spline-conv", "1.2.2", "torch_spline_conv-1.2.2.tar.gz",
    "ed45a81da29f774665dbdd4709d7e534cdf16d2e7006dbd06957f35bd09661b2",
)
TORCH_SPARSE_0618_SDIST = Artifact(
    "torch-sparse", "0.6.18", "torch_sparse-0.6.18.tar.gz",
    "2f14c510a6e93f404c6ea357210615b3c15a71731f9dbd86f25434e34fb5a741",
)


def cache_dir() -> Path:
    configured = os.environ.get("SRCBUILD_REAL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "srcbuild-ci" / "real"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(artifact: Artifact) -> Path:
    """The artifact's path in the cache, downloaded first if it is not there (sha256-checked)."""
    target = cache_dir() / artifact.filename
    if target.exists() and sha256_of(target) == artifact.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        try:
            got = _download_wheel(artifact, Path(tmp)) if artifact.is_wheel else _download_sdist(artifact, Path(tmp))
        except (OSError, subprocess.CalledProcessError, ValueError) as exc:
            got = None
            reason = str(exc)
        else:
            reason = ""
        require_tool(f"{artifact.filename} from the package index ({reason or 'not found'})", got)
        assert got is not None
        actual = sha256_of(got)
        assert actual == artifact.sha256, f"{artifact.filename}: sha256 {actual}, pinned {artifact.sha256}"
        os.replace(got, target)
    return target


def _download_wheel(artifact: Artifact, into: Path) -> Path | None:
    requirement = into / "requirement.txt"
    requirement.write_text(f"{artifact.project}=={artifact.version} --hash=sha256:{artifact.sha256}\n")
    # The wheel's own tags decide what pip accepts, so ask for exactly those.
    _name, _ver, python_tag, abi_tag, platform_tag = artifact.filename[: -len(".whl")].rsplit("-", 4)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
            "--require-hashes", "-r", str(requirement), "-d", str(into)]
    for platform in platform_tag.split("."):
        argv += ["--platform", platform]
    if python_tag.startswith("cp") and abi_tag != "none":
        argv += ["--python-version", python_tag[2:], "--implementation", "cp", "--abi", abi_tag]
    # A constraints file in pip's configuration may cap a version this pin names exactly (an empty
    # one replaces it; an empty value does not).
    env = {**os.environ, "PIP_CONSTRAINT": os.devnull}
    subprocess.run(argv, check=True, env=env, capture_output=True, text=True)
    path = into / artifact.filename
    return path if path.exists() else None


def _index_urls() -> list[str]:
    """The index pip is configured with (index-url, else pip's own default), then its extra indexes."""
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    values: dict[str, str] = {}
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        values[key.split(".", 1)[-1]] = value.strip().strip("'\"")
    if os.environ.get("PIP_INDEX_URL"):
        values["index-url"] = os.environ["PIP_INDEX_URL"]
    main = values.get("index-url") or json.loads(
        subprocess.run(
            [sys.executable, "-c", "import json; from pip._internal.models.index import PyPI; "
             "print(json.dumps(PyPI.simple_url))"], capture_output=True, text=True, check=True
        ).stdout
    )
    extras = (os.environ.get("PIP_EXTRA_INDEX_URL") or values.get("extra-index-url", "")).split()
    return [main, *extras]


def _download_sdist(artifact: Artifact, into: Path) -> Path | None:
    project = artifact.project.lower().replace("_", "-").replace(".", "-")
    for index in _index_urls():
        page_url = index.rstrip("/") + f"/{project}/"
        try:
            with urllib.request.urlopen(page_url, timeout=60) as response:
                page = response.read().decode("utf-8", "replace")
                content_type = response.headers.get("Content-Type", "")
        except (OSError, ValueError):
            continue
        for name, url in page_files(page_url, page, content_type):
            if name != artifact.filename:
                continue
            path = into / artifact.filename
            with urllib.request.urlopen(url.split("#")[0], timeout=120) as response, path.open("wb") as out:
                shutil.copyfileobj(response, out)
            return path
    return None
