"""What only a GPU shows: srcbuild's checks and an extension's kernels run on this machine's NVIDIA GPU.

These run where ``nvidia-smi`` names a GPU and an environment holds a CUDA torch that sees it
(``SRCBUILD_TEST_GPU_ENV``, a venv or conda prefix; default: the interpreter running the tests).
Elsewhere they skip, saying so: no setup installs a GPU. On such a machine:

* ``srcbuild smoke --env`` runs the GPU checks (arch list, a kernel launch, a matmul against the
  CPU, a cuDNN convolution) on the installed torch, then DDP: one rank over NCCL, two over gloo,
  and two over NCCL refused with one GPU;
* ``srcbuild ext torch-scatter==2.1.2`` compiles for this GPU's compute capability with the CUDA
  toolkit matching that torch (``SRCBUILD_TEST_GPU_CUDA_HOME``, default ``/usr/local/cuda``), the
  wheel holds SASS for it, a second run is a cache hit, and its scatter kernels on the GPU agree
  with torch's own reductions on the CPU. The sdist comes from the configured index, or from a
  mirror made by ``srcbuild mirror create --ext torch-scatter==2.1.2`` (``SRCBUILD_TEST_GPU_MIRROR``)
  on a machine without a network.

Each step's time is printed (``-s``). ``SRCBUILD_TEST_GPU_DIR`` keeps the work and cache
directories there instead of in pytest's temporary directory, so a second run reuses the build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.integration]
SCATTER = "torch-scatter==2.1.2"


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: str  # "9.0"
    env: Path  # the prefix whose torch is checked
    torch: str  # its torch.__version__
    cuda: str  # its torch.version.cuda
    cudnn: str  # the cuDNN its torch loads ("9.19"), from torch.backends.cudnn.version()
    gcc: str  # the host gcc's major version


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    print(f"{' '.join(argv[:4])} ...: {time.monotonic() - started:.1f} s (exit {done.returncode})")
    return done


@pytest.fixture(scope="session")
def gpu() -> Gpu:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("no NVIDIA GPU here (nvidia-smi is not on PATH)")
    query = run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    if query.returncode != 0 or not query.stdout.strip():
        pytest.skip(f"no NVIDIA GPU here (nvidia-smi: {(query.stderr or query.stdout).strip()[:200]})")
    name, capability = (part.strip() for part in query.stdout.splitlines()[0].split(","))
    env = Path(os.environ.get("SRCBUILD_TEST_GPU_ENV") or sys.prefix)
    probe = (
        "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), "
        "torch.backends.cudnn.version())"
    )
    found = run([str(env / "bin" / "python"), "-c", probe])
    fields = found.stdout.split()
    if found.returncode != 0 or len(fields) != 4 or fields[2] != "True":
        pytest.skip(f"{env} holds no CUDA torch that sees the GPU ({(found.stderr or found.stdout).strip()[-200:]})")
    gcc = run(["gcc", "-dumpversion"]).stdout.strip().split(".")[0]
    cudnn = int(fields[3]) if fields[3].isdigit() else 0  # 91900: major * 10000 + minor * 100 + patch
    return Gpu(name, capability, env, fields[0], fields[1], f"{cudnn // 10000}.{cudnn // 100 % 100}", gcc)


def recipe(tmp: Path, gpu: Gpu, name: str, extra: str = "") -> Path:
    torch = gpu.torch.split("+")[0]
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    path = tmp / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\ndescription = "{gpu.name} with torch {gpu.torch}"\n[torch]\ntag = "v{torch}"\n'
        f'[toolchain]\npython = "{python}"\ngcc = "{gpu.gcc}"\ncuda = "{gpu.cuda}"\n{extra}'
        f'[gpu]\narch = ["{gpu.capability}"]\nptx = false\n'
    )
    return path


def srcbuild(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    root = Path(os.environ.get("SRCBUILD_TEST_GPU_DIR") or root)
    env = {**os.environ, "SRCBUILD_WORK_DIR": str(root / "work"), "SRCBUILD_CACHE_DIR": str(root / "cache")}
    return run([sys.executable, "-m", "srcbuild", *argv], env=env)


def checks_of(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    report = json.loads(done.stdout)
    found = {c["name"]: c for c in report["checks"]}
    for check in report["checks"]:
        print(f"  {check['name']:<16} {check['status']:<8} {check['seconds']:6.2f} s  {check['detail']}")
    return found


def test_smoke_runs_the_gpu_checks_and_ddp_over_nccl(tmp_path: Path, gpu: Gpu) -> None:
    path = recipe(tmp_path, gpu, "this-gpu", f'cudnn = "{gpu.cudnn}"\n')
    done = srcbuild(tmp_path, "smoke", "--recipe", str(path), "--env", str(gpu.env), "--ddp", "1", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    checks = checks_of(done)
    sm = "sm_" + gpu.capability.replace(".", "")
    for name in ("import", "arch-list", "kernel-launch", "matmul-gpu", "cudnn-conv", "ddp-rank-0"):
        assert checks[name]["status"] == "pass", checks[name]
    assert sm in str(checks["arch-list"]["detail"])
    assert json.loads(done.stdout)["ddp"]["plan"]["backend"] == "nccl"


def test_two_ranks_on_one_gpu_use_gloo_and_nccl_is_refused(tmp_path: Path, gpu: Gpu) -> None:
    path = recipe(tmp_path, gpu, "this-gpu")
    gpus = len(run(["nvidia-smi", "-L"]).stdout.splitlines())
    if gpus != 1:
        pytest.skip(f"this machine has {gpus} GPUs; the refusal is for two ranks on one")
    auto = srcbuild(tmp_path, "smoke", "--recipe", str(path), "--env", str(gpu.env), "--ddp", "2", "--json")
    assert auto.returncode == 0, auto.stderr[-3000:]
    checks = checks_of(auto)
    assert checks["ddp-rank-0"]["status"] == checks["ddp-rank-1"]["status"] == "pass"
    assert json.loads(auto.stdout)["ddp"]["plan"]["backend"] == "gloo"
    nccl = srcbuild(tmp_path, "smoke", "--recipe", str(path), "--env", str(gpu.env), "--ddp", "2", "--backend", "nccl")
    assert nccl.returncode == 6
    assert "--backend nccl needs a GPU per rank: 2 ranks, 1 GPUs here" in nccl.stdout + nccl.stderr


KERNELS = """
import json, sys, time, torch, torch_scatter
torch.manual_seed(0)
n, groups = 4_000_000, 1000
src = torch.randn(n, 16)
index = torch.randint(0, groups, (n,))
src_gpu, index_gpu = src.cuda(), index.cuda()
out = {}
for reduce in ("sum", "mean", "max", "min"):
    want = torch.zeros(groups, 16).scatter_reduce(0, index[:, None].expand(-1, 16), src, reduce if reduce in
        ("sum", "mean") else "a" + reduce, include_self=False)
    got = torch_scatter.scatter(src_gpu, index_gpu, dim=0, dim_size=groups, reduce=reduce)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(10):
        torch_scatter.scatter(src_gpu, index_gpu, dim=0, dim_size=groups, reduce=reduce)
    torch.cuda.synchronize()
    gpu_s = (time.perf_counter() - started) / 10
    started = time.perf_counter()
    torch_scatter.scatter(src, index, dim=0, dim_size=groups, reduce=reduce)
    cpu_s = time.perf_counter() - started
    err = ((got.cpu() - want).abs() / want.abs().clamp(min=1)).max().item()  # relative where large
    out[reduce] = {"max_err": err, "gpu_s": gpu_s, "cpu_s": cpu_s}
print(json.dumps(out))
"""


def test_ext_builds_for_this_gpu_and_its_kernels_agree_with_torch(tmp_path: Path, gpu: Gpu) -> None:
    home = Path(os.environ.get("SRCBUILD_TEST_GPU_CUDA_HOME", "/usr/local/cuda"))
    if not (home / "bin" / "nvcc").exists():
        pytest.skip(f"no CUDA toolkit at {home} (SRCBUILD_TEST_GPU_CUDA_HOME names one)")
    path = recipe(tmp_path, gpu, "this-gpu-ext", extra="")
    path.write_text(path.read_text() + '[build]\nenv = { FORCE_ONLY_CUDA = "1" }\n')
    args = [SCATTER, "--recipe", str(path), "--env", str(gpu.env), "--cuda-home", str(home), "--no-provision"]
    if os.environ.get("SRCBUILD_TEST_GPU_MIRROR"):
        args += ["--mirror-dir", os.environ["SRCBUILD_TEST_GPU_MIRROR"]]
    first = srcbuild(tmp_path, "ext", *args)
    assert first.returncode == 0, (first.stdout + first.stderr)[-4000:]
    wheel = Path(first.stdout.strip().splitlines()[-1])
    second = srcbuild(tmp_path, "ext", *args)
    assert second.returncode == 0 and second.stdout.strip().splitlines()[-1] == str(wheel)
    assert "cache hit" in second.stdout + second.stderr
    verify = srcbuild(tmp_path, "verify", str(wheel), "--arch", gpu.capability, "--json")
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    print(f"  {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB")
    beside = tmp_path / "site"  # the extension beside the environment's torch, the environment unchanged
    pip = [str(gpu.env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
           "--target", str(beside), str(wheel)]
    installed = run(pip)
    assert installed.returncode == 0, installed.stderr[-3000:]
    kernels = run([str(gpu.env / "bin" / "python"), "-c", KERNELS], env={**os.environ, "PYTHONPATH": str(beside)})
    assert kernels.returncode == 0, kernels.stderr[-3000:]
    results = json.loads(kernels.stdout)
    for reduce, figures in results.items():
        print(f"  scatter {reduce:<4}: max error vs torch CPU {figures['max_err']:.1e}, "
              f"GPU {figures['gpu_s'] * 1e3:.2f} ms, CPU {figures['cpu_s'] * 1e3:.1f} ms")
        assert figures["max_err"] < 1e-3, (reduce, figures)  # float32 sums of ~4,000 values in another order


def test_recommend_reads_this_gpu_from_nvidia_smi(tmp_path: Path, gpu: Gpu) -> None:
    done = srcbuild(tmp_path, "recommend")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"compute capability {gpu.capability}" in done.stdout
    assert "from nvidia-smi" in done.stdout
    if tuple(int(p) for p in gpu.capability.split(".")) >= (7, 5):  # current official wheels carry SASS for it
        assert "no build needed:" in done.stdout and "pip install torch==" in done.stdout
