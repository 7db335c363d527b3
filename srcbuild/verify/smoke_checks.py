"""The smoke checks, run by the throwaway venv's interpreter (``python smoke_checks.py checks CFG``).

A script, not a module srcbuild imports: it needs torch. Each check prints one line
``SMOKE {"name", "status": pass|fail|skipped, "detail", "seconds"}``. ``allreduce`` mode runs under
``mpirun -np 2``. Kept compatible with the oldest Python a recipe may use (3.6: no walrus, no
``from __future__ import annotations`` needed).
"""

import json
import sys
import time

NO_GPU = "no GPU: torch.cuda.is_available() is False"


def emit(text):
    """One line in one write: ranks share the pipe, and an unbuffered print() writes the text and
    the newline separately, so two ranks' lines could end up on one."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def report(name, status, detail, seconds=0.0):
    line = {"name": name, "status": status, "detail": detail, "seconds": round(seconds, 4)}
    emit("SMOKE " + json.dumps(line))


def check(name, fn):
    start = time.perf_counter()
    try:
        status, detail = fn()
    except Exception as exc:  # a failing check is a result, not a crash
        status, detail = "fail", f"{type(exc).__name__}: {exc}".splitlines()[0]
    report(name, status, detail, time.perf_counter() - start)


def timed(fn, reps=3):
    best, out = None, None
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return out, best


def cpu_matmul(torch):
    torch.manual_seed(0)
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    c, t = timed(lambda: a @ b)
    diff = (c.double() - a.double() @ b.double()).abs().max().item()
    detail = f"512x512 float32 on CPU in {t * 1e3:.2f} ms, max |diff| vs float64 {diff:.2e}"
    return ("pass" if diff < 1e-2 else "fail"), detail


def arch_list(torch, wanted):
    archs = torch.cuda.get_arch_list()
    major, minor = torch.cuda.get_device_capability(0)
    cc = f"sm_{major}{minor}"
    missing = [a for a in wanted if a not in archs]
    runs = cc in archs or any(a.startswith("compute_") for a in archs)
    detail = f"{torch.cuda.get_device_name(0)} ({cc}); arch list {' '.join(archs)}"
    if missing:
        detail += f"; missing {' '.join(missing)}"
    return ("pass" if runs and not missing else "fail"), detail


def kernel_launch(torch):
    x = torch.ones(1 << 20, device="cuda")
    total = x.add_(1).sum().item()
    torch.cuda.synchronize()
    return ("pass" if total == 2 * (1 << 20) else "fail"), f"ones+1 summed to {total:.0f} on the GPU"


def gpu_matmul(torch):
    torch.manual_seed(0)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    c_cpu, t_cpu = timed(lambda: a @ b)
    ga, gb = a.cuda(), b.cuda()

    def run():
        out = ga @ gb
        torch.cuda.synchronize()
        return out

    run()
    c_gpu, t_gpu = timed(run)
    diff = (c_gpu.cpu() - c_cpu).abs().max().item()
    detail = (
        f"2048x2048: GPU {t_gpu * 1e3:.2f} ms vs CPU {t_cpu * 1e3:.2f} ms (x{t_cpu / t_gpu:.1f}), max |diff| {diff:.2e}"
    )
    return ("pass" if diff < 1e-1 else "fail"), detail


def cudnn_conv(torch):
    if not torch.backends.cudnn.is_available():
        return "fail", "torch.backends.cudnn.is_available() is False"
    torch.manual_seed(0)
    x, w = torch.randn(4, 3, 64, 64), torch.randn(8, 3, 3, 3)
    ref = torch.nn.functional.conv2d(x, w)
    out = torch.nn.functional.conv2d(x.cuda(), w.cuda()).cpu()
    diff = (out - ref).abs().max().item()
    detail = f"cuDNN {torch.backends.cudnn.version()} conv2d, max |diff| vs CPU {diff:.2e}"
    return ("pass" if diff < 1e-2 else "fail"), detail


def nms(torch, device):
    import torchvision

    torch.manual_seed(0)
    xy = torch.rand(200, 2) * 100
    boxes = torch.cat([xy, xy + torch.rand(200, 2) * 20 + 1], 1)
    scores = torch.rand(200)
    keep_cpu = torchvision.ops.nms(boxes, scores, 0.5)
    if device == "cpu":
        return "pass", f"torchvision {torchvision.__version__} nms on CPU kept {len(keep_cpu)} of 200"
    keep = torchvision.ops.nms(boxes.cuda(), scores.cuda(), 0.5).cpu()
    same = torch.equal(keep.sort().values, keep_cpu.sort().values)
    detail = f"torchvision nms on CUDA kept {len(keep)} of 200 ({'same as' if same else 'differs from'} CPU)"
    return ("pass" if same else "fail"), detail


def has_torchvision(cfg):
    """The config says (a wheel was installed), or None: whether torchvision imports here (``--env``)."""
    if cfg["torchvision"] is not None:
        return cfg["torchvision"]
    import importlib.util

    return importlib.util.find_spec("torchvision") is not None


def checks(cfg):
    import torch

    cfg = dict(cfg, torchvision=has_torchvision(cfg))

    report("import", "pass", f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    check("matmul-cpu", lambda: cpu_matmul(torch))
    if torch.cuda.is_available():
        check("arch-list", lambda: arch_list(torch, cfg["archs"]))
        check("kernel-launch", lambda: kernel_launch(torch))
        check("matmul-gpu", lambda: gpu_matmul(torch))
        if cfg["cudnn"]:
            check("cudnn-conv", lambda: cudnn_conv(torch))
        if cfg["torchvision"]:
            check("torchvision-nms", lambda: nms(torch, "cuda"))
    else:
        for name in ["arch-list", "kernel-launch", "matmul-gpu"] + (["cudnn-conv"] if cfg["cudnn"] else []):
            report(name, "skipped", NO_GPU)
        if cfg["torchvision"]:
            check("torchvision-nms-cpu", lambda: nms(torch, "cpu"))
    if cfg["mpi"]:
        import torch.distributed as dist

        ok = dist.is_available() and dist.is_mpi_available()
        report("mpi-available", "pass" if ok else "fail", f"torch.distributed.is_mpi_available() is {ok}")


def allreduce():
    import torch
    import torch.distributed as dist

    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if rank == 0:
        want = size * (size + 1) / 2
        detail = f"{size} ranks, all_reduce(sum) = {t.item():.0f} (expected {want:.0f})"
        report("mpi-allreduce", "pass" if t.item() == want else "fail", detail)


if __name__ == "__main__":
    if sys.argv[1] == "allreduce":
        allreduce()
    else:
        checks(json.loads(sys.argv[2]))
