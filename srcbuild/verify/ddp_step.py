"""The DDP smoke step, run by the throwaway venv's interpreter under a launcher.

A script, not a module srcbuild imports: it needs torch. Two modes:

* ``probe``: one line ``DDP {"torch", "distributed", "nccl", "gloo", "mpi", "gpus"}`` saying what
  this wheel has (``torch.distributed.is_*_available()``) and how many GPUs torch sees;
* ``step BACKEND STEPS NODE``: one rank of a tiny DDP training run. Every rank starts from the same
  seed but trains on its own data, so only the gradient all-reduce keeps the ranks' parameters
  equal; after the last step every rank compares its parameters with rank 0's (broadcast) and
  prints one ``SMOKE`` line ``ddp-rank-R``.

The launcher gives the rank: ``torchrun`` and ``torch.distributed.launch`` set ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` (and ``LOCAL_RANK``, or pass ``--local_rank``
before torch 1.10); ``mpirun`` sets ``OMPI_COMM_WORLD_*`` and the ``mpi`` backend needs no
address. Kept compatible with Python 3.6 (the oldest a recipe may use). Its lines are written as
``smoke_checks.py`` writes them, with that script's ``emit`` and ``report``.
"""

import datetime
import json
import os
import sys
import time

from smoke_checks import emit, report  # the smoke script beside this one (the script's directory is on sys.path)

TIMEOUT_S = 300
TOLERANCE = 1e-6


def probe():
    import torch

    out = {"torch": torch.__version__.split("+")[0], "distributed": False, "nccl": False, "gloo": False}
    out["mpi"] = False
    out["gpus"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
    try:
        import torch.distributed as dist

        out["distributed"] = dist.is_available()
        if out["distributed"]:
            out["nccl"] = dist.is_nccl_available()
            out["gloo"] = dist.is_gloo_available()
            out["mpi"] = dist.is_mpi_available()
    except ImportError:
        pass
    emit("DDP " + json.dumps(out))


def local_rank():
    """LOCAL_RANK (torchrun, launch --use_env), ``--local_rank=N`` (launch), or MPI's local rank."""
    for arg in sys.argv:
        for flag in ("--local_rank=", "--local-rank="):
            if arg.startswith(flag):
                return int(arg[len(flag) :])
    for name in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def train(torch, dist, backend, steps, node):
    from torch.nn.parallel import DistributedDataParallel

    rank, size, local = dist.get_rank(), dist.get_world_size(), local_rank()
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same initial weights everywhere (DDP also broadcasts rank 0's)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(device)
    start = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    ddp = DistributedDataParallel(model, device_ids=[local] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own batch
    loss = None
    for _ in range(steps):
        x = torch.randn(32, 8, generator=data).to(device)
        y = x.sum(dim=1, keepdim=True)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()  # DDP all-reduces (averages) the gradients here
        optimizer.step()
    mine = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    theirs = mine.clone()
    dist.broadcast(theirs, 0)
    diff = (mine - theirs).abs().max().item()
    moved = (mine - start.to(device)).abs().max().item()
    final = float(loss.item()) if loss is not None else float("nan")
    detail = (
        f"rank {rank}/{size} (node {node}, local rank {local}) {backend} on {device}: {steps} steps, "
        f"loss {final:.4f}, max |param - rank 0's| {diff:.1e}"
    )
    if diff > TOLERANCE:
        return "fail", detail + ": parameters differ from rank 0's (gradients were not all-reduced)"
    if moved == 0.0:
        return "fail", detail + ": parameters did not change (no training step ran)"
    return "pass", detail


def step(backend, steps, node):
    import torch
    import torch.distributed as dist

    start = time.perf_counter()
    name = "ddp-rank-" + os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "?"))
    try:
        timeout = datetime.timedelta(seconds=TIMEOUT_S)
        dist.init_process_group(backend, timeout=timeout)
        name = f"ddp-rank-{dist.get_rank()}"
        status, detail = train(torch, dist, backend, steps, node)
        dist.barrier()
        dist.destroy_process_group()
    except Exception as exc:  # a failing rank is a result, not a crash
        status, detail = "fail", f"{type(exc).__name__}: {exc}".splitlines()[0]
    report(name, status, detail, time.perf_counter() - start)
    return 0 if status == "pass" else 1


if __name__ == "__main__":
    ARGS = [a for a in sys.argv[1:] if not a.startswith("--local")]  # launch adds --local_rank=N
    if ARGS[0] == "probe":
        probe()
    else:
        sys.exit(step(ARGS[1], int(ARGS[2]), int(ARGS[3])))
