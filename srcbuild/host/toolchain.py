"""Compilers and CUDA libraries on this machine: gcc-N, CUDA toolkits (nvcc), cuDNN and NCCL headers.

A tool counts only when it answers: a gcc is the version ``gcc -dumpfullversion`` prints, a CUDA
toolkit is the release its ``nvcc --version`` prints. cuDNN and NCCL are read from their headers
(``CUDNN_MAJOR/MINOR/PATCHLEVEL`` in ``cudnn_version.h`` or, before cuDNN 8, ``cudnn.h``;
``NCCL_MAJOR/MINOR/PATCH`` in ``nccl.h``).

Where a CUDA toolkit is looked for, in order: ``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda-X.Y``,
``/usr/local/cuda``, ``/opt/cuda*``, the active conda env, ``nvcc`` on ``PATH`` (distro packages
install it in ``/usr/bin``). Where a gcc is looked for: ``gcc-N`` on ``PATH``, ``/usr/bin``,
``/usr/local/bin``, ``/opt/gcc-N*/bin`` and plain ``gcc`` when its major is N.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from srcbuild import proc
from srcbuild.host.facts import CudaToolkit, GccInstall, HeaderVersion, version_matches
from srcbuild.host.locate import Runner, is_executable, path_dirs, read_text, under, unique_paths, which_in
from srcbuild.host.parsers import parse_gcc_version, parse_header_version, parse_nvcc_version
from srcbuild.knowledge.cuda_components import components_for

_GCC_NAME_RE = re.compile(r"^gcc-(\d+)$")
GCC_DIRS = ("/usr/bin", "/usr/local/bin")
TARGET_DIR = Path("targets") / "x86_64-linux"
# "warn": a CUDA home lacking part of the complete-home contract is a warning, not an error (a home
# you know serves your build, e.g. an extension that includes no torch CUDA header).
CONTRACT_VAR = "SRCBUILD_CUDA_CONTRACT"
CUDNN_INCLUDE_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/local/include")


def nvcc_version(nvcc: Path, run: Runner = proc.probe) -> str | None:
    out = run([str(nvcc), "--version"], timeout=10)
    return parse_nvcc_version(out) if out else None


def _home_candidates(environ: Mapping[str, str], root: Path, version: str | None) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if environ.get(var):
            out.append((Path(environ[var]), var))
    local = under(root, "/usr/local")
    if version:
        out.append((local / f"cuda-{version}", f"/usr/local/cuda-{version}"))
    versioned = sorted(local.glob("cuda-*"), key=lambda p: p.name, reverse=True) if local.is_dir() else []
    out.extend((p, f"/usr/local/{p.name}") for p in versioned)
    out.append((local / "cuda", "/usr/local/cuda"))
    opt = under(root, "/opt")
    if opt.is_dir():
        out.extend((p, f"/opt/{p.name}") for p in sorted(opt.glob("cuda*")))
    if environ.get("CONDA_PREFIX"):
        out.append((Path(environ["CONDA_PREFIX"]), "conda env"))
    return out


def _nvcc_candidates(
    environ: Mapping[str, str], root: Path, version: str | None, extra_homes: Sequence[tuple[Path, str]] = ()
) -> list[tuple[Path, Path, str]]:
    """(home, nvcc, source) in search order, duplicates (same nvcc file) removed."""
    found: list[tuple[Path, Path, str]] = []
    for home, source in [*_home_candidates(environ, root, version), *extra_homes]:
        nvcc = home / "bin" / "nvcc"
        if is_executable(nvcc):
            found.append((home, nvcc, source))
    path_nvcc = which_in(environ)("nvcc")
    if path_nvcc is not None:
        real = path_nvcc.resolve()
        found.append((real.parent.parent, path_nvcc, "PATH"))
    seen: set[Path] = set()
    unique = []
    for home, nvcc, source in found:
        key = nvcc.resolve()
        if key in seen:
            continue
        seen.add(key)
        unique.append((home, nvcc, source))
    return unique


def list_cuda(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    run: Runner = proc.probe,
    extra_homes: Sequence[tuple[Path, str]] = (),
) -> list[CudaToolkit]:
    """Every CUDA toolkit whose nvcc answers, in search order; a PATH wrapper of a found one is folded.

    ``extra_homes`` are more (directory, source) pairs to look in, e.g. conda environments.
    """
    toolkits: list[CudaToolkit] = []
    candidates = list(_nvcc_candidates(environ, root, None, extra_homes))
    # every nvcc answers at the same time; the answers are read in search order
    asked = [proc.Background(functools.partial(nvcc_version, nvcc, run)) for _, nvcc, _ in candidates]
    for (home, nvcc, source), answer in zip(candidates, asked):
        version = answer.result()
        if version is None:
            continue
        if source == "PATH" and any(t.version == version for t in toolkits):
            continue  # e.g. /usr/local/bin/nvcc exec'ing /usr/local/cuda-13.0/bin/nvcc
        toolkits.append(CudaToolkit(version, home, nvcc, source, missing_components(home, version)))
    return toolkits


def find_cuda(
    version: str, environ: Mapping[str, str], root: Path = Path("/"), run: Runner = proc.probe
) -> CudaToolkit | None:
    """The first toolkit, in search order, whose nvcc reports ``version`` ("9.2" or "11.4.1")."""
    release = ".".join(version.split(".")[:2])
    for home, nvcc, source in _nvcc_candidates(environ, root, release):
        found = nvcc_version(nvcc, run)
        if found is not None and version_matches(version, found):
            return CudaToolkit(found, home, nvcc, source, missing_components(home, found))
    return None


def _home_include_dirs(home: Path) -> tuple[Path, ...]:
    return (home / "include", home / TARGET_DIR / "include", home / "extras" / "CUPTI" / "include")


def _home_library_dirs(home: Path) -> tuple[Path, ...]:
    return (
        home / "lib64",
        home / "lib",
        home / TARGET_DIR / "lib",
        home / "lib" / "x86_64-linux-gnu",  # a distribution's toolkit in /usr
        home / "extras" / "CUPTI" / "lib64",
    )


def missing_components(home: Path, version: str) -> tuple[str, ...]:
    """The components of the complete-home contract (``knowledge/data/cuda_components.toml``) that
    the CUDA home ``home`` of ``version`` lacks: a header not in its include directories, a
    library without its linker name (``libcublas.so``) in its library directories, or a file
    (``libcudadevrt.a``, ``stubs/libcuda.so``) not in them."""
    includes = _home_include_dirs(home)
    libraries = _home_library_dirs(home)
    missing = []
    for component in components_for(version):
        headers_ok = all(
            any((d / name).is_file() for d in includes for name in header.split("|")) for header in component.headers
        )
        libraries_ok = all(any((d / f"lib{lib}.so").exists() for d in libraries) for lib in component.libraries)
        files_ok = all(any((d / name).is_file() for d in libraries) for name in component.files)
        if not (headers_ok and libraries_ok and files_ok) and component.name not in missing:
            missing.append(component.name)
    return tuple(missing)


def gcc_version(gcc: Path, run: Runner = proc.probe) -> str | None:
    """ "11.3.0" from ``gcc -dumpfullversion -dumpversion`` (old gcc ignores the first flag)."""
    out = run([str(gcc), "-dumpfullversion", "-dumpversion"], timeout=10)
    return parse_gcc_version(out) if out else None


def _gcc_candidates(
    environ: Mapping[str, str], root: Path, major: str | None, extra_dirs: Sequence[Path] = ()
) -> list[Path]:
    dirs = [*path_dirs(environ), *(under(root, d) for d in GCC_DIRS), *extra_dirs]
    opt = under(root, "/opt")
    if opt.is_dir():
        dirs.extend(sorted(p / "bin" for p in opt.glob(f"gcc-{major or ''}*")))
    found: list[Path] = []
    for directory in dirs:
        if not directory.is_dir():
            continue
        if major is not None:
            names = [f"gcc-{major}", "gcc"]
        else:
            names = sorted(
                (p.name for p in directory.iterdir() if _GCC_NAME_RE.match(p.name)), key=lambda n: int(n[4:])
            )
            names.append("gcc")
        found.extend(directory / n for n in names if is_executable(directory / n))
    return unique_paths(found)


def _gxx_for(gcc: Path) -> Path | None:
    gxx = gcc.with_name(gcc.name.replace("gcc", "g++", 1))
    return gxx if is_executable(gxx) else None


def list_gcc(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    run: Runner = proc.probe,
    extra_dirs: Sequence[Path] = (),
) -> list[GccInstall]:
    """One entry per gcc major found (the first spelling wins), sorted by major.

    ``extra_dirs`` are more ``bin`` directories to look in after the usual ones (provisioned gccs).
    """
    by_major: dict[int, GccInstall] = {}
    for gcc in _gcc_candidates(environ, root, None, extra_dirs):
        version = gcc_version(gcc, run)
        if version is None:
            continue
        major = int(version.split(".")[0])
        by_major.setdefault(major, GccInstall(major, version, gcc, _gxx_for(gcc)))
    return [by_major[m] for m in sorted(by_major)]


def header_version(path: Path, prefix: str, patch_name: str) -> str | None:
    """ "8.5.0" from the ``#define <prefix>MAJOR/MINOR/<patch_name>`` lines of a header."""
    text = read_text(path)
    return parse_header_version(text, prefix, patch_name) if text else None


def _include_dirs(
    environ: Mapping[str, str],
    root: Path,
    toolkits: list[CudaToolkit],
    var_prefix: str,
    extra: Sequence[Path] = (),
) -> list[Path]:
    dirs: list[Path] = []
    for var in (f"{var_prefix}_INCLUDE_DIR", f"{var_prefix}_HOME", f"{var_prefix}_ROOT", f"{var_prefix}_ROOT_DIR"):
        if environ.get(var):
            base = Path(environ[var])
            dirs.extend([base, base / "include"] if not var.endswith("INCLUDE_DIR") else [base])
    dirs.extend(t.home / "include" for t in toolkits)
    dirs.extend(t.home / "targets" / "x86_64-linux" / "include" for t in toolkits)
    if environ.get("CONDA_PREFIX"):
        dirs.append(Path(environ["CONDA_PREFIX"]) / "include")
    dirs.extend(under(root, d) for d in CUDNN_INCLUDE_DIRS)
    dirs.extend(extra)
    return unique_paths([d for d in dirs if d.is_dir()])


def find_cudnn(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    toolkits: list[CudaToolkit] | None = None,
    extra: Sequence[Path] = (),
) -> list[HeaderVersion]:
    """cuDNN versions from ``cudnn_version*.h`` (cuDNN >= 8) or ``cudnn*.h`` (cuDNN 7).

    ``extra`` are more include directories to look in last (provisioned cuDNN prefixes).
    """
    found: list[HeaderVersion] = []
    for directory in _include_dirs(environ, root, toolkits or [], "CUDNN", extra):
        headers = sorted(directory.glob("cudnn_version*.h")) or sorted(directory.glob("cudnn*.h"))
        for header in headers:
            version = header_version(header, "CUDNN_", "PATCHLEVEL")
            if version and not any(f.header.resolve() == header.resolve() for f in found):
                found.append(HeaderVersion(version, header))
                break
    return found


def find_nccl(
    environ: Mapping[str, str],
    root: Path = Path("/"),
    toolkits: list[CudaToolkit] | None = None,
    extra: Sequence[Path] = (),
) -> list[HeaderVersion]:
    """NCCL versions from ``nccl.h``; ``extra``: more include directories (provisioned NCCL)."""
    found: list[HeaderVersion] = []
    for directory in _include_dirs(environ, root, toolkits or [], "NCCL", extra):
        header = directory / "nccl.h"
        version = header_version(header, "NCCL_", "PATCH") if header.is_file() else None
        if version and not any(f.header.resolve() == header.resolve() for f in found):
            found.append(HeaderVersion(version, header))
    return found
