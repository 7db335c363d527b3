"""CUDA from Debian's non-free ``nvidia-cuda-toolkit`` packages, as a relocatable home.

The packages are fetched with a private apt configuration (``apt.PrivateApt``: the mirror this
machine already uses; apt checks every .deb against the archive's signed Release file), unpacked
with ``dpkg-deb -x`` (no maintainer scripts, no root) and assembled into the layout nvcc expects::

    bin/      nvcc, cudafe++, ptxas, fatbinary, nvlink, nvprune, cuobjdump, bin2c, nvdisasm, cu++filt,
              crt/, nvcc.profile (relocatable)
    nvvm/     bin/cicc, lib64/libnvvm.so*, libdevice/libdevice.10.bc
    include/  the headers of NVIDIA's component wheels (pip --require-hashes): the runtime, cccl
              (thrust, cub), cuBLAS, cuSPARSE, cuSOLVER, cuRAND, cuFFT, NVTX, NVRTC, CUPTI
    lib/      libcudart.so* and the wheels' libraries, each with its linker name (libcublas.so);
              libcudadevrt.a, libcudart_static.a and stubs/libcuda.so, which torch's CMake links
              at configure, taken alone out of nvidia-cuda-dev (``debfile.extract_members``)
    lib64     -> lib

The home is installed only if its own nvcc reports the expected version and it holds every
component of the complete-home contract (``knowledge/data/cuda_components.toml``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srcbuild.errors import HostError, MirrorMissing, StepFailed
from srcbuild.files import sha256_file
from srcbuild.offline import DEBIAN_VAR, DIR_VAR
from srcbuild.precedence import env_value
from srcbuild.toolchain.debfile import NotADeb, extract_members
from srcbuild.toolchain.facts import DebianRoute, ToolchainFacts, Wheel, data_size, release_of
from srcbuild.toolchain.fetches import Fetches
from srcbuild.toolchain.index_files import IndexFile
from srcbuild.toolchain.providers.apt import PrivateApt, configured_mirror, mirror_options
from srcbuild.toolchain.providers.base import Context, Offer, Request, run_step
from srcbuild.toolchain.providers.cuda_home import NVCC_PROFILE, check_complete, check_nvcc
from srcbuild.toolchain.store import Provisioned, Source

TOOLS_IN_BIN = (
    "nvcc",
    "cudafe++",
    "ptxas",
    "fatbinary",
    "nvlink",
    "nvprune",
    "cuobjdump",
    "bin2c",
    "nvdisasm",
    "cu++filt",
)


class DebianProvider:
    name = "debian"
    tools: tuple[str, ...] = ("cuda",)
    data_file = "debian.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        """This provider's rows, from its data file's tables."""
        debian = tuple(
            DebianRoute(
                str(d["cuda"]),
                str(d["expect"]),
                str(d["suite"]),
                tuple(str(c) for c in d.get("components", ("main",))),
                str(d.get("keyring", "")),
                tuple(str(p) for p in d.get("packages", ())),
                tuple(
                    Wheel(str(w["requirement"]), str(w["sha256"]), data_size(w.get("size")))
                    for w in d.get("wheels", ())
                ),
                data_size(d.get("download_size")),
                str(d.get("source", "")),
                str(d.get("extract", {}).get("package", "")),
                tuple(str(f) for f in d.get("extract", {}).get("files", ())),
            )
            for d in data.get("debian", [])
        )
        return ToolchainFacts(debian=debian)

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        """The URL this route fetches from first, probed before it is chosen (``toolchain.reach``)."""
        return offer.details.get("mirror")

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        """What provisioning ``offer`` downloads (``srcbuild mirror create`` gathers it), or None
        when the data names no files for it."""
        route = facts.debian_for(offer.request.version)
        if route is None:
            return None
        wheels = tuple(IndexFile("cuda", w.requirement, w.sha256, w.size) for w in route.wheels)
        return Fetches(index=wheels, debian=(route,))

    def __init__(self, apt_root: Path = Path("/etc/apt")) -> None:
        self.apt_root = apt_root

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        if request.tool != "cuda":
            return None
        route = facts.debian_for(request.version)
        if route is None or shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            return None
        mirror = configured_mirror(self.apt_root)
        if mirror is None:
            return None
        return Offer(
            request=request,
            provider=self.name,
            name="cuda",
            version=release_of(route.expect),
            origin=f"Debian {route.suite} {'/'.join(route.components)} packages from {mirror}",
            size=route.download_size,
            details={"mirror": mirror},
        )

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        route = facts.debian_for(offer.request.version)
        assert route is not None
        mirror_dir = env_value(ctx.environ, DIR_VAR)
        in_mirror = env_value(ctx.environ, DEBIAN_VAR) if mirror_dir else None
        mirror = in_mirror or offer.details.get("mirror") or configured_mirror(self.apt_root)
        if not mirror:
            raise HostError("no Debian mirror is configured in /etc/apt", "use --from redist or --from runfile")
        scratch = ctx.work_dir / f"debian-{route.suite}"
        extra = mirror_options(scratch / "apt") if in_mirror else ()
        apt = PrivateApt(scratch / "apt", mirror, route.suite, route.components, route.keyring, extra)
        apt.prepare()
        debs = scratch / "debs"
        if debs.exists():
            shutil.rmtree(debs)
        debs.mkdir(parents=True)
        try:
            run_step(apt.update_argv(), ctx, "apt-get update (private sources list)")
            run_step(apt.download_argv(route.all_packages), ctx, "apt-get download", cwd=debs)
        except StepFailed as exc:
            if not in_mirror:
                raise
            raise MirrorMissing(
                f"Debian {route.suite}'s {', '.join(route.all_packages)} are not in the mirror {mirror_dir} "
                f"({exc.message})",
                "add them on a connected machine: SRCBUILD_TOOLCHAIN_PROVIDERS=debian srcbuild mirror create",
                {"create_prefix": "SRCBUILD_TOOLCHAIN_PROVIDERS=debian"},
            ) from None
        root = scratch / "root"
        if root.exists():
            shutil.rmtree(root)
        sources = []
        for deb in sorted(debs.glob("*.deb")):
            if route.extract_package and deb.name.startswith(f"{route.extract_package}_"):
                _extract(deb, route.extract_files, root, ctx)
            else:
                run_step(["dpkg-deb", "-x", str(deb), str(root)], ctx, f"dpkg-deb -x {deb.name}")
            sources.append(Source(f"apt:{deb.name}", sha256_file(deb), deb.stat().st_size))
        wheels = self._wheels(route, scratch, ctx)
        sources += [Source(f"pip:{w.name}", sha256_file(w), w.stat().st_size) for w in wheels]
        _assemble(root, wheels, scratch / "wheels-x", target, route.extract_files)
        nvcc = check_nvcc(target, release_of(route.expect), "the Debian CUDA home")
        check_complete(target, nvcc, "the Debian CUDA home")
        shutil.rmtree(scratch, ignore_errors=True)
        return Provisioned(tuple(sources), {"nvcc": nvcc, "mirror": mirror, "suite": route.suite})

    def _wheels(self, route: DebianRoute, scratch: Path, ctx: Context) -> list[Path]:
        wheel_dir = scratch / "wheels"
        if wheel_dir.exists():
            shutil.rmtree(wheel_dir)
        wheel_dir.mkdir(parents=True)
        requirements = scratch / "wheels.txt"
        requirements.write_text(
            "".join(f"{w.requirement} --hash=sha256:{w.sha256}\n" for w in route.wheels), encoding="utf-8"
        )
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        argv += ["--require-hashes", "-r", str(requirements), "-d", str(wheel_dir)]
        run_step(argv, ctx, f"pip download of {len(route.wheels)} NVIDIA component wheels")
        return sorted(wheel_dir.glob("*.whl"))


def _extract(deb: Path, files: tuple[str, ...], root: Path, ctx: Context) -> None:
    """Only ``files`` of ``deb`` into ``root`` (the rest of the package is not unpacked)."""
    if ctx.stream is not None:
        print(f"+ {len(files)} files out of {deb.name}", file=ctx.stream, flush=True)
    try:
        missing = extract_members(deb, files, root)
    except NotADeb as exc:
        raise StepFailed(f"{deb.name}: {exc}", "run the same command again; apt checked the download") from None
    if missing:
        raise StepFailed(
            f"{deb.name} holds no {', '.join(missing)} (srcbuild/toolchain/data/debian.toml); nothing was installed",
            "rerun with --debug and report the log",
        )


def _first_file(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.is_file()), None)


def _assemble(root: Path, wheels: list[Path], unpacked: Path, home: Path, extracted: tuple[str, ...] = ()) -> None:
    """Lay the unpacked packages and wheels out as a CUDA home in ``home``."""
    for sub in ("bin", "nvvm/bin", "nvvm/lib64", "nvvm/libdevice", "include", "lib"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    toolkit_bin = root / "usr/lib/nvidia-cuda-toolkit/bin"
    for tool in TOOLS_IN_BIN:  # the first is the real binary, /usr/bin holds wrappers
        found = _first_file(toolkit_bin / tool, root / "usr/bin" / tool)
        if found is not None:
            shutil.copy2(found.resolve() if found.is_symlink() else found, home / "bin" / tool)
    if (toolkit_bin / "crt").is_dir():
        shutil.copytree(toolkit_bin / "crt", home / "bin" / "crt", dirs_exist_ok=True)
    cicc = _first_file(toolkit_bin / "cicc") or next(iter(sorted(root.rglob("cicc"))), None)
    if cicc is None:
        raise StepFailed("the Debian packages hold no cicc", "rerun with --debug and report the log")
    shutil.copy2(cicc, home / "nvvm" / "bin" / "cicc")
    lib_dir = root / "usr/lib/x86_64-linux-gnu"
    for lib in sorted(lib_dir.glob("libnvvm.so*")):
        _copy_keep_links(lib, home / "nvvm" / "lib64" / lib.name)
    for lib in sorted(lib_dir.glob("libcudart.so*")):
        _copy_keep_links(lib, home / "lib" / lib.name)
    for member in extracted:  # below usr/lib/x86_64-linux-gnu: libcudadevrt.a, stubs/libcuda.so
        below = (root / member).relative_to(lib_dir)
        (home / "lib" / below).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / member, home / "lib" / below)
    versioned = sorted((home / "lib").glob("libcudart.so.*"))
    if versioned and not (home / "lib" / "libcudart.so").exists():
        (home / "lib" / "libcudart.so").symlink_to(versioned[0].name)
    import zipfile  # only when assembling: doctor and plan import this module for its offers

    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpacked)
    libdevice = next(iter(sorted([*root.rglob("libdevice.10.bc"), *unpacked.rglob("libdevice.10.bc")])), None)
    if libdevice is None:
        raise StepFailed("neither the packages nor the wheels hold libdevice.10.bc", "rerun with --debug")
    shutil.copy2(libdevice, home / "nvvm" / "libdevice" / "libdevice.10.bc")
    for component in sorted((unpacked / "nvidia").iterdir()) if (unpacked / "nvidia").is_dir() else ():
        if (component / "include").is_dir():
            shutil.copytree(component / "include", home / "include", dirs_exist_ok=True, ignore=_NOT_CUDA)
        if (component / "lib").is_dir() and component.name not in ("cuda_runtime", "cuda_nvcc"):
            shutil.copytree(component / "lib", home / "lib", dirs_exist_ok=True, ignore=_NOT_CUDA)
    link_linker_names(home / "lib")
    if not (home / "lib64").exists():
        (home / "lib64").symlink_to("lib")  # where torch's CMake (FindCUDA) and cpp_extension look first
    (home / "bin" / "nvcc.profile").write_text(NVCC_PROFILE, encoding="utf-8")


_NOT_CUDA = shutil.ignore_patterns("__init__.py", "__pycache__")


def link_linker_names(lib_dir: Path) -> None:
    """``libcublas.so`` -> ``libcublas.so.11`` for each versioned library that lacks its linker name
    (the wheels ship only the versioned file; the linker and CMake's find_library look for the name)."""
    for versioned in sorted(lib_dir.glob("lib*.so.*")):
        linker = lib_dir / (versioned.name.split(".so.", 1)[0] + ".so")
        if not linker.exists() and not linker.is_symlink():
            linker.symlink_to(versioned.name)


def _copy_keep_links(src: Path, dest: Path) -> None:
    if src.is_symlink():
        dest.symlink_to(Path(os.readlink(src)).name)
    else:
        shutil.copy2(src, dest)
