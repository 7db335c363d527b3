"""The canary step of a torch build: what the real configure must decide, as data (pure).

The torch era's row (``srcbuild/knowledge/data/canary.toml``) says how to configure without
compiling and which units to compile first; the resolved build's variables say what CMake must
find: the CUDA release and home, nvcc's host compiler, the archs, cuDNN (version and library
directory), NCCL, MPI on or off, the build environment's Python and numpy. Each becomes an
``Expect`` the handler checks against the configured tree.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild.canary.readout import Expect, is_on
from srcbuild.command import Command
from srcbuild.knowledge.canary import era_for
from srcbuild.plan.actions import Canary
from srcbuild.plan.model import Step
from srcbuild.resolve import ResolvedBuild

WHY = (
    "most build failures show in the first minutes: CMake finding another CUDA, cuDNN or MPI than the "
    "plan's, nvcc rejecting the host compiler, an arch the CUDA cannot target; the configure the build "
    "then reuses is read back against the plan and a few CUDA units are compiled for every arch first "
    "(--no-canary: skip; --canary: stop after it)"
)


def expectations(r: ResolvedBuild) -> tuple[Expect, ...]:
    """What CMake must decide for the build ``r`` describes."""
    env = r.env_changes.final_values()
    tc = r.recipe.toolchain
    out: list[Expect] = []
    cuda = is_on(env.get("USE_CUDA")) and bool(tc.cuda)
    if cuda:
        out.append(Expect("cuda-version", "CUDA version", str(tc.cuda), "prefix",
                          ("summary:CUDA version", "cache:CUDA_VERSION"), "toolchain.cuda"))
        if env.get("CUDA_HOME"):
            out.append(Expect("cuda-home", "CUDA home", env["CUDA_HOME"], "path",
                              ("cache:CUDA_TOOLKIT_ROOT_DIR", "cache:CUDAToolkit_ROOT"), "toolchain.cuda"))
        if env.get("TORCH_CUDA_ARCH_LIST"):
            out.append(Expect("archs", "CUDA archs", env["TORCH_CUDA_ARCH_LIST"], "archs", (), "gpu.arch"))
        host = env.get("CUDAHOSTCXX") or env.get("CUDA_HOST_COMPILER")
        if host:
            out.append(Expect("host-compiler", "nvcc host compiler", host, "path",
                              ("cache:CMAKE_CUDA_HOST_COMPILER", "cache:CUDA_HOST_COMPILER",
                               "summary:CUDA host compiler"), "toolchain.gcc"))
        if "USE_CUDNN" in env:
            out.append(Expect("cudnn", "USE_CUDNN", env["USE_CUDNN"], "on",
                              ("summary:USE_CUDNN", "cache:USE_CUDNN"), "toolchain.cudnn"))
            if is_on(env["USE_CUDNN"]) and tc.cudnn:
                out.append(Expect("cudnn-version", "cuDNN version", str(tc.cudnn), "prefix",
                                  ("summary:cuDNN version", "cache:CUDNN_VERSION"), "toolchain.cudnn",
                                  when="summary:USE_CUDNN"))
            library = env.get("CUDNN_LIBRARY") or env.get("CUDNN_LIB_DIR")
            if is_on(env["USE_CUDNN"]) and library:
                out.append(Expect("cudnn-library", "cuDNN library", library, "under",
                                  ("cache:CUDNN_LIBRARY_PATH", "cache:CUDNN_LIBRARY"), "toolchain.cudnn",
                                  when="summary:USE_CUDNN"))
        if "USE_NCCL" in env:
            out.append(Expect("nccl", "USE_NCCL", env["USE_NCCL"], "on", ("summary:USE_NCCL", "cache:USE_NCCL"),
                              "toolchain.nccl"))
        if is_on(env.get("USE_SYSTEM_NCCL")) and env.get("NCCL_ROOT"):
            out.append(Expect("nccl-library", "NCCL library", env["NCCL_ROOT"], "under",
                              ("cache:NCCL_LIBRARIES", "cache:NCCL_LIBRARY"), "toolchain.nccl"))
    if "USE_MPI" in env:
        out.append(Expect("mpi", "USE_MPI", env["USE_MPI"], "on", ("summary:USE_MPI", "cache:USE_MPI"), "mpi"))
    out.append(Expect("python", "Python", str(r.python), "path",
                      ("cache:PYTHON_EXECUTABLE", "cache:Python_EXECUTABLE"), "build environment"))
    out.append(Expect("numpy", "numpy headers", str(r.environment.prefix), "under", ("cache:NUMPY_INCLUDE_DIR",),
                      "build environment", when="cache:USE_NUMPY"))
    return tuple(out)


def canary_step(r: ResolvedBuild) -> Step:
    """The canary step of ``r`` (torch only); skipped with a reason where it cannot run."""
    build_dir = r.checkout / "build"
    era = era_for(r.recipe.torch.tag)
    skip = ""
    if r.options.canary == "skip":
        skip = "--no-canary"
    elif era is None:
        skip = f"srcbuild's data has no canary for torch {r.recipe.torch.tag} (srcbuild/knowledge/data/canary.toml)"
    if skip or era is None:
        return Step(id="canary", title="Canary: configure and compile a few units first", why=WHY,
                    action=Canary(None, build_dir, skip=skip))
    env = r.env_changes.final_values()
    has = {"": True, "cuda": is_on(env.get("USE_CUDA")) and bool(r.recipe.toolchain.cuda),
           "mpi": is_on(env.get("USE_MPI"))}
    units = tuple(u for u in era.units if has.get(u.when, False))
    configure = Command((str(r.python), "setup.py", *era.configure),
                        "configure with torch's own CMake (no compile); the build reuses this tree",
                        cwd=r.checkout, env=r.env_changes)
    reconfigure = Command((str(r.python), "setup.py", *era.reconfigure),
                          "configure again: this tree's configure summary was not kept", cwd=r.checkout,
                          env=r.env_changes)
    arch_list = env.get("TORCH_CUDA_ARCH_LIST", "") if has["cuda"] else ""
    return Step(
        id="canary",
        title="Canary: configure for real and compile a few units per arch",
        why=WHY,
        action=Canary(configure, Path(r.checkout / era.build_dir), reconfigure, units, expectations(r), arch_list),
        writes_checkout=True,  # its build tree is the build's, not a local modification
    )
