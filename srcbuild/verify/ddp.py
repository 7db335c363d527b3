"""``srcbuild smoke --ddp N``: a small DistributedDataParallel run with the wheel, on one node or many.

After the single-process checks, the venv's interpreter says what the wheel has
(``torch.distributed.is_nccl_available()`` / ``is_gloo_available()`` / ``is_mpi_available()``,
its torch version and the GPUs it sees); from that this module decides, without running
anything:

* the backend: ``nccl`` when the wheel has it and this node has a GPU per rank, ``gloo``
  otherwise; ``mpi`` when asked for (an MPI wheel), launched by ``mpirun``;
* the launcher the wheel's torch has: ``torchrun`` from torch 1.10 on (the console script that
  release added), ``python -m torch.distributed.launch`` before it;
* this node's command (``--nnodes/--node-rank/--master-addr/--master-port`` run one node's share)
  and the exact ``srcbuild smoke`` commands to run on the other nodes.

Each rank of ``ddp_step.py`` trains a tiny model for a few steps on its own data and checks that
its parameters equal rank 0's, which holds only if the gradients were all-reduced.

Why NCCL is missing from the sm_30 recipes: they build with ``USE_NCCL=0`` because the bundled
NCCL uses ``__funnelshift_r``, which compute capability 3.0 lacks (dizcza/pytorch-sm30-docker#3,
the ``nccl-sm30`` breakage in ``knowledge/data/breakages.toml``), so DDP with those wheels is
limited to gloo, or MPI with an MPI recipe.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, TextIO

from packaging.version import InvalidVersion, Version

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import UsageError
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.verify.smoke import SmokeCheck, _last_error, _parse

STEP_SCRIPT = Path(__file__).with_name("ddp_step.py")
BACKENDS = ("auto", "nccl", "gloo", "mpi")
TORCHRUN_SINCE = Version("1.10")  # torch 1.10 added the `torchrun` console script
DEFAULT_PORT = 29500  # torch's own default MASTER_PORT
STEPS = 3
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@record
class WheelBackends:
    """What the installed wheel has, as its own interpreter reports it (``ddp_step.py probe``)."""

    torch: str
    distributed: bool
    nccl: bool
    gloo: bool
    mpi: bool
    gpus: int

    @classmethod
    def parse(cls, lines: Sequence[str]) -> Optional[WheelBackends]:
        for line in lines:
            if line.startswith("DDP "):
                data = json.loads(line[len("DDP ") :])
                return cls(
                    str(data["torch"]),
                    bool(data["distributed"]),
                    bool(data["nccl"]),
                    bool(data["gloo"]),
                    bool(data["mpi"]),
                    int(data["gpus"]),
                )
        return None

    def summary(self) -> str:
        """``nccl no, gloo yes, mpi no``."""
        return ", ".join(f"{name} {'yes' if getattr(self, name) else 'no'}" for name in ("nccl", "gloo", "mpi"))


@record
class DdpRequest:
    """What the user asked for: ``--ddp N`` processes on this node, and where it sits among nodes."""

    nproc: int
    backend: str = "auto"
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = DEFAULT_PORT
    steps: int = STEPS
    smoke_args: tuple[str, ...] = ()  # how this smoke was asked for (``--recipe R --wheel W``), for the other nodes

    def check(self) -> None:
        """Usage errors, before anything runs."""
        if self.nproc < 1:
            raise UsageError(f"--ddp {self.nproc}: needs at least one process", "give --ddp 2")
        if self.backend not in BACKENDS:
            raise UsageError(f"--backend {self.backend}: not one of {', '.join(BACKENDS)}", "give --backend gloo")
        if self.nnodes < 1 or not 0 <= self.node_rank < self.nnodes:
            raise UsageError(
                f"--node-rank {self.node_rank}: must be between 0 and {self.nnodes - 1} (--nnodes {self.nnodes})",
                f"give --node-rank 0 on the first node and up to {max(self.nnodes - 1, 0)} on the others",
            )
        if self.backend == "mpi" and self.nnodes > 1:
            raise UsageError(
                "--backend mpi with --nnodes: mpirun starts the ranks on every node itself",
                f"run `mpirun -np {self.nproc * self.nnodes} --host NODE1:{self.nproc},NODE2:{self.nproc} ...` "
                "yourself, or check the nodes with --backend gloo",
            )


@record
class DdpPlan:
    """This node's launch, decided from the request and the wheel's backends."""

    backend: str
    launcher: str  # "torchrun" | "torch.distributed.launch" | "mpirun"
    command: Command
    local_ranks: int
    other_nodes: tuple[str, ...]  # the srcbuild command for every other node rank
    notes: tuple[str, ...]  # what the wheel has, why a backend is missing

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "launcher": self.launcher,
            "command": self.command.to_json(),
            "local_ranks": self.local_ranks,
            "other_nodes": list(self.other_nodes),
            "notes": list(self.notes),
        }


def launcher_for(torch_version: str) -> str:
    """``torchrun`` from torch 1.10 on, ``torch.distributed.launch`` before."""
    try:
        version = Version(torch_version.split("+")[0])
    except InvalidVersion:
        return "torchrun"
    return "torchrun" if version.release[:2] >= TORCHRUN_SINCE.release[:2] else "torch.distributed.launch"


def nccl_note(recipe: Recipe, backends: WheelBackends) -> Optional[str]:
    """Why this wheel has no NCCL (None when it has it)."""
    if backends.nccl:
        return None
    if recipe.toolchain.cuda is None:
        return "NCCL: absent, as in every CPU-only wheel; DDP uses gloo (or MPI with an MPI wheel)"
    if recipe.build.env_dict.get("USE_NCCL") == "0":
        sm30 = any(str(cc) == "3.0" for cc in recipe.gpu.arch)
        why = (
            "the bundled NCCL uses __funnelshift_r, which compute capability 3.0 lacks"
            if sm30
            else "the recipe turns it off"
        )
        return (
            f"NCCL: absent: recipe {recipe.name} builds with USE_NCCL=0 ({why}), so DDP with this wheel "
            "is limited to gloo, or MPI with an MPI recipe"
        )
    return "NCCL: absent from this wheel; DDP is limited to gloo or MPI"


def choose_backend(request: DdpRequest, backends: WheelBackends) -> tuple[Optional[str], str]:
    """The backend to use and why; ``(None, why)`` when the wheel cannot do what was asked."""
    if not backends.distributed:
        return None, f"torch {backends.torch}: torch.distributed.is_available() is False (built without it)"
    if request.backend == "auto":
        if backends.nccl and backends.gpus >= request.nproc:
            return "nccl", f"the wheel has NCCL and this node has a GPU per rank ({backends.gpus} GPUs)"
        if backends.gloo:
            if backends.nccl:
                return "gloo", f"{request.nproc} ranks but {backends.gpus} GPUs here: gloo on the CPU"
            return "gloo", "gloo on the CPU (the wheel has no NCCL)"
        if backends.mpi:
            return "mpi", "the wheel has neither NCCL nor gloo, but MPI"
        return None, "the wheel has none of nccl, gloo, mpi"
    if not getattr(backends, request.backend):
        return None, f"--backend {request.backend}: torch.distributed.is_{request.backend}_available() is False"
    if request.backend == "nccl" and backends.gpus < request.nproc:
        return None, f"--backend nccl needs a GPU per rank: {request.nproc} ranks, {backends.gpus} GPUs here"
    return request.backend, f"--backend {request.backend}"


def other_node_commands(request: DdpRequest, backend: str) -> tuple[str, ...]:
    """The ``srcbuild smoke`` line to run on every other node rank."""
    lines = []
    for rank in range(request.nnodes):
        if rank == request.node_rank:
            continue
        argv = ["srcbuild", "smoke", *request.smoke_args]
        argv += ["--ddp", str(request.nproc), "--backend", backend, "--nnodes", str(request.nnodes)]
        argv += ["--node-rank", str(rank), "--master-addr", request.master_addr]
        argv += ["--master-port", str(request.master_port)]
        lines.append(proc.format_argv(argv))
    return tuple(lines)


def launch_argv(
    launcher: str, request: DdpRequest, backend: str, venv: Path, mpirun: str, openmpi: bool
) -> tuple[str, ...]:
    """The command line of this node's share."""
    vpy = str(venv / "bin" / "python")
    step = (str(STEP_SCRIPT), "step", backend, str(request.steps), str(request.node_rank))
    if launcher == "mpirun":
        return (mpirun, "-np", str(request.nproc), *(("--oversubscribe",) if openmpi else ()), vpy, *step)
    head: tuple[str, ...] = (
        (str(venv / "bin" / "torchrun"),) if launcher == "torchrun" else (vpy, "-m", "torch.distributed.launch")
    )
    return (
        *head,
        "--nproc_per_node",
        str(request.nproc),
        "--nnodes",
        str(request.nnodes),
        "--node_rank",
        str(request.node_rank),
        "--master_addr",
        request.master_addr,
        "--master_port",
        str(request.master_port),
        *step,
    )


def plan_ddp(
    recipe: Recipe,
    request: DdpRequest,
    backends: WheelBackends,
    venv: Path,
    mpirun: Optional[str] = None,
    openmpi: bool = True,
    as_root: bool = False,
) -> tuple[Optional[DdpPlan], str]:
    """This node's DDP launch, or ``(None, why)`` when the wheel cannot run the requested backend."""
    notes = [f"torch {backends.torch}: {backends.summary()}"]
    note = nccl_note(recipe, backends)
    if note:
        notes.append(note)
    backend, why = choose_backend(request, backends)
    if backend is None:
        return None, "; ".join([why, *notes[1:]])
    if backend == "mpi" and not mpirun:
        return None, "--backend mpi: mpirun is not on PATH (apt-get install openmpi-bin)"
    launcher = "mpirun" if backend == "mpi" else launcher_for(backends.torch)
    env = EnvChanges().set("OMP_NUM_THREADS", "1", "one thread per rank")
    if backend == "gloo" and request.master_addr in LOOPBACK:
        env = env.set("GLOO_SOCKET_IFNAME", "lo", "every rank is on this machine")
    if launcher == "mpirun" and as_root:  # Open MPI refuses root without these (feasibility.md §5)
        env = env.set("OMPI_ALLOW_RUN_AS_ROOT", "1", "smoke").set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", "smoke")
    argv = launch_argv(launcher, request, backend, venv, mpirun or "mpirun", openmpi)
    total = request.nproc * request.nnodes
    command = Command(argv, f"DDP: {total} ranks over {backend} with {launcher} ({why})", env=env)
    return DdpPlan(backend, launcher, command, request.nproc, other_node_commands(request, backend), tuple(notes)), why


def probe_command(venv: Path) -> Command:
    return Command((str(venv / "bin" / "python"), str(STEP_SCRIPT), "probe"), "which backends the wheel has")


def free_port() -> int:
    """A TCP port nothing listens on now (the single-node default, so two smokes do not collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@record
class DdpResult:
    checks: tuple[SmokeCheck, ...]
    plan: Optional[DdpPlan]

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.to_json() if self.plan else None}


def run_ddp(
    recipe: Recipe,
    request: DdpRequest,
    venv: Path,
    base_env: Mapping[str, str],
    log: Path,
    echo: Optional[TextIO] = None,
    mpirun: Optional[str] = None,
    openmpi: bool = True,
    as_root: bool = False,
    announce: Optional[Callable[[DdpPlan], None]] = None,
) -> DdpResult:
    """Probe the wheel, plan this node's share and run it; each rank's result is a check.
    ``announce`` sees the plan before the launch (to print the other nodes' commands)."""
    lines: list[str] = []
    probe = probe_command(venv)
    proc.run(probe.argv, env=dict(base_env), log_path=log, on_line=lines.append, echo=echo)
    backends = WheelBackends.parse(lines)
    if backends is None:
        return DdpResult((SmokeCheck("ddp-backends", "fail", _last_error(lines)),), None)
    plan, why = plan_ddp(recipe, request, backends, venv, mpirun, openmpi, as_root)
    checks = [SmokeCheck("ddp-backends", "pass", "; ".join([backends.summary(), *(plan.notes[1:] if plan else ())]))]
    if plan is None:
        return DdpResult((*checks, SmokeCheck("ddp", "fail", why)), None)
    if announce is not None:
        announce(plan)
    out: list[str] = []
    result = proc.run(
        plan.command.argv, env=plan.command.env.apply(base_env), log_path=log, on_line=out.append, echo=echo
    )
    ranks = sorted(_parse(out), key=lambda c: _rank_order(c.name))
    checks += ranks
    if len(ranks) < plan.local_ranks:
        missing = plan.local_ranks - len(ranks)
        detail = f"{plan.launcher} exited {result.returncode}, {missing} of {plan.local_ranks} ranks gave no result"
        checks.append(SmokeCheck("ddp-launch", "fail", f"{detail}: {_last_error(out)}"))
    return DdpResult(tuple(checks), plan)


def _rank_order(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 1 << 30
