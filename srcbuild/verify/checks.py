"""The non-kernel checks of a measured wheel against its recipe: MPI, wheel tags, CUDA runtime, version.

Each function is pure (a ``WheelReport`` and a ``Recipe`` in, findings out) and reports every
problem it sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from srcbuild.findings import Finding, Severity
from srcbuild.recipe import Recipe
from srcbuild.verify.elfdeps import cudart_version, libmpi_abi
from srcbuild.verify.mpi import HostMpi, abis_for, describe_abi, expected_abi, version_matches
from srcbuild.verify.wheel import WheelReport

if TYPE_CHECKING:
    from srcbuild.verify.manylinux import Need

CMAKE_NO_MPI = "Not compiling with MPI. Suppress this warning with -DUSE_MPI=OFF"
MPI_SOURCE = "pytorch/pytorch: cmake/Dependencies.cmake (if(USE_MPI) find_package(MPI)); pytorch/pytorch#91678"
TAGS_SOURCE = (
    "PEP 425 (cpXY tags) and PEP 3149 (the 'm' ABI flag of Python <= 3.7: cpXY-cpXYm, 3.8+: cpXY-cpXY); "
    "PEP 600 (a source build is linux_x86_64)"
)
LINUX_PLATFORMS = ("linux_", "manylinux")


def check_mpi(wheel: WheelReport, recipe: Recipe, host: Optional[HostMpi]) -> list[Finding]:
    """With ``mpi.enabled``, some library must need ``libmpi.so.N`` of the recipe's MPI version."""
    linked = [(lib.name, lib.dynamic.libmpi) for lib in wheel.libraries if lib.dynamic.libmpi]
    impl, version = recipe.mpi.implementation, recipe.mpi.version
    if not recipe.mpi.enabled:
        if not linked:
            return []
        name, soname = linked[0]
        return [
            Finding(
                "mpi-unexpected",
                Severity.WARNING,
                f"{name} links {soname} although the recipe does not enable MPI; "
                "users need that MPI installed to import it",
                MPI_SOURCE,
                "set mpi.enabled = true in the recipe, or build with USE_MPI=0",
                "mpi.enabled",
            )
        ]
    wanted = f"{impl} {version}" if version else impl
    if not linked:
        return [
            Finding(
                "mpi-not-linked",
                Severity.ERROR,
                f"the recipe enables MPI ({wanted}) but no library in {wheel.path.name} links libmpi (ELF DT_NEEDED): "
                f"CMake did not find MPI, printed '{CMAKE_NO_MPI}' and built torch.distributed without the MPI backend",
                MPI_SOURCE,
                f"install {wanted} with its compiler wrappers (mpicc/mpicxx on PATH) on the build host, look for "
                f"'{CMAKE_NO_MPI}' in the configure log, and rebuild",
                "mpi.enabled",
            )
        ]
    findings: list[Finding] = []
    expected = expected_abi(impl, version)
    for soname in sorted({s for _, s in linked if s}):
        name = next(n for n, s in linked if s == soname)
        abi = libmpi_abi(soname)
        if abi is None:
            continue
        fix = f"build against {wanted} (its mpicc/mpicxx first on PATH) and rebuild"
        if not abis_for(impl, abi):
            findings.append(
                Finding(
                    "mpi-implementation",
                    Severity.ERROR,
                    f"{name} links {soname}, which is {describe_abi(abi)}, not {impl} as mpi.implementation says",
                    MPI_SOURCE,
                    fix,
                    "mpi.implementation",
                )
            )
        elif expected is not None and expected.abi != abi:
            findings.append(
                Finding(
                    "mpi-version",
                    Severity.ERROR,
                    f"{name} links {soname} ({describe_abi(abi)}), but the recipe asks for {wanted}, "
                    f"which ships libmpi.so.{expected.abi}",
                    expected.source,
                    fix,
                    "mpi.version",
                )
            )
    if host is not None and version and (host.implementation != impl or not version_matches(version, host.version)):
        short = ".".join(host.version.split(".")[:2])
        findings.append(
            Finding(
                "mpi-host-version",
                Severity.ERROR,
                f"this host's MPI is {host.implementation} {host.version} (`{host.tool}`), but the recipe asks for "
                f"{wanted}; CMake links the MPI it finds on PATH",
                MPI_SOURCE,
                f'put {wanted}\'s mpicc/mpicxx first on PATH and rebuild, or set mpi.version = "{short}"',
                "mpi.version",
            )
        )
    return findings


def _python_tags(python: str) -> tuple[str, str]:
    major, minor = (int(x) for x in python.split(".")[:2])
    tag = f"cp{major}{minor}"
    return tag, tag + ("m" if (major, minor) <= (3, 7) else "")


def check_abi(wheel: WheelReport, recipe: Recipe) -> list[Finding]:
    """Python and ABI tags match ``toolchain.python``; a Linux platform; the local version names the build."""
    findings: list[Finding] = []
    python = recipe.toolchain.python
    py_tag, abi_tag = _python_tags(python)
    name = wheel.path.name
    if py_tag not in wheel.python_tags:
        findings.append(
            Finding(
                "wheel-python-tag",
                Severity.ERROR,
                f"{name}: Python tag {'.'.join(wheel.python_tags)} does not match toolchain.python = "
                f'"{python}" (expected {py_tag})',
                TAGS_SOURCE,
                f"build with a Python {python} interpreter in the build environment",
                "toolchain.python",
            )
        )
    elif abi_tag not in wheel.abi_tags and not {"abi3", "none"} & set(wheel.abi_tags):
        findings.append(
            Finding(
                "wheel-abi-tag",
                Severity.ERROR,
                f"{name}: ABI tag {'.'.join(wheel.abi_tags)} does not match Python {python} (expected {abi_tag})",
                TAGS_SOURCE,
                f"build with a Python {python} interpreter in the build environment",
                "toolchain.python",
            )
        )
    if not any(p.startswith(LINUX_PLATFORMS) for p in wheel.platform_tags):
        findings.append(
            Finding(
                "wheel-platform",
                Severity.ERROR,
                f"{name}: platform tag {'.'.join(wheel.platform_tags)} is not a Linux platform (expected linux_x86_64)",
                TAGS_SOURCE,
                "build the wheel on Linux with `setup.py bdist_wheel`",
            )
        )
    expected = recipe.local_version()
    if wheel.local != expected:
        found = f"+{wheel.local}" if wheel.local else "no local version"
        findings.append(
            Finding(
                "wheel-local-version",
                Severity.ERROR,
                f"{name}: version {wheel.version} has {found}, expected +{expected} (the recipe's build label)",
                "pytorch/pytorch: tools/generate_torch_version.py (PYTORCH_BUILD_VERSION, local label included)",
                f"rebuild through srcbuild so the version ends in +{expected}",
            )
        )
    return findings


def check_cuda_runtime(wheel: WheelReport, recipe: Recipe) -> list[Finding]:
    """The CUDA the libraries were built against (libcudart soname, ``version.py``) is the recipe's."""
    cuda = recipe.toolchain.cuda
    name = wheel.path.name
    source = "pytorch/pytorch tools/generate_torch_version.py (version.py cuda = ...); ELF DT_NEEDED libcudart.so.*"
    if cuda is None:
        evidence = list(wheel.cudart)
        if wheel.cuda_version_py:
            evidence.append(f"{wheel.version_py} says cuda = '{wheel.cuda_version_py}'")
        if not wheel.kernels.empty:
            evidence.append("it holds CUDA kernels")
        if not evidence:
            return []
        return [
            Finding(
                "cuda-runtime",
                Severity.ERROR,
                f'{name}: the recipe is CPU-only (toolchain.cuda = "none") but the wheel was built with CUDA: '
                + "; ".join(evidence),
                source,
                "build with USE_CUDA=0, or set toolchain.cuda",
                "toolchain.cuda",
            )
        ]
    want_major, want_minor = (int(x) for x in cuda.split(".")[:2])
    findings: list[Finding] = []
    fix = f"point the build at CUDA {cuda} (CUDA_HOME and nvcc on PATH) and rebuild"
    for soname in wheel.cudart:
        parsed = cudart_version(soname)
        if parsed is None:
            continue
        major, minor = parsed
        if major != want_major or (minor is not None and minor != want_minor):
            libs = [lib.name for lib in wheel.libraries if lib.dynamic.cudart == soname]
            findings.append(
                Finding(
                    "cuda-runtime",
                    Severity.ERROR,
                    f"{libs[0]} links {soname} (CUDA {major}{f'.{minor}' if minor is not None else '.x'}), "
                    f'but toolchain.cuda = "{cuda}"',
                    source,
                    fix,
                    "toolchain.cuda",
                )
            )
    py = wheel.cuda_version_py
    if py is not None:
        parts = py.split(".")[:2]
        if py == "":
            findings.append(
                Finding(
                    "cuda-runtime",
                    Severity.ERROR,
                    f"{wheel.version_py} says cuda = None: the wheel was built without CUDA",
                    source,
                    fix,
                    "toolchain.cuda",
                )
            )
        elif parts != [str(want_major), str(want_minor)]:
            findings.append(
                Finding(
                    "cuda-runtime",
                    Severity.ERROR,
                    f"{wheel.version_py} says cuda = '{py}', but toolchain.cuda = \"{cuda}\"",
                    source,
                    fix,
                    "toolchain.cuda",
                )
            )
    elif not wheel.cudart:
        findings.append(
            Finding(
                "cuda-runtime-unknown",
                Severity.ERROR if wheel.kernels.empty else Severity.WARNING,
                f"{name}: no library links libcudart and no version.py names a CUDA version"
                + (": the wheel was built without CUDA" if wheel.kernels.empty else " (static runtime?)"),
                source,
                fix,
                "toolchain.cuda",
            )
        )
    return findings


PORTABLE_SOURCE = (
    "https://peps.python.org/pep-0600/ (a manylinux_X_Y wheel may only need what glibc X.Y's policy provides); "
    "auditwheel/policy/manylinux-policy.json (the policy's symbol versions); the sysroot's glibc: "
    "conda-forge/linux-sysroot-feedstock"
)


def check_portable(wheel: Path, floor: str) -> list[Finding]:
    """A portable build's wheel must need no glibc newer than its sysroot's (``floor``, "2.17"):
    an error naming the symbols that do (at most five, then how many more). libstdc++ and
    libgcc_s versions newer than the sysroot's manylinux policy provides (``verify.manylinux``)
    are a warning: they come from the conda gcc's libstdc++, not the sysroot, and make the tag
    newer (a gcc 12 build with ``GLIBCXX_3.4.26`` is manylinux_2_31), not the wheel unusable."""
    from packaging.utils import parse_wheel_filename

    from srcbuild.verify.manylinux import lacking, needs_of, policy_for_glibc
    from srcbuild.verify.symbols import glibc_pair, linux_arch, member_symbols, wheel_links

    major, _, minor = floor.partition(".")
    glibc = (int(major), int(minor))
    arch = linux_arch(t.platform for t in parse_wheel_filename(wheel.name)[3])
    links = wheel_links(wheel)
    needs = needs_of({m: link.versions for m, link in links.items()})
    too_new = [n for n in needs if (glibc_pair(n.version) or (0, 0)) > glibc]
    policy = policy_for_glibc(glibc, arch) if arch else None
    beyond = [n for n in lacking(policy, needs) if glibc_pair(n.version) is None] if policy else []
    if too_new or beyond:  # name the symbols behind each version: read only the members concerned
        concerned = {n.member for n in (*too_new, *beyond)}
        named = needs_of(
            {m: member_symbols(wheel, m) or link.versions for m, link in links.items() if m in concerned}
        )
        by_key = {(n.member, n.version): n for n in named}
        too_new = [by_key.get((n.member, n.version), n) for n in too_new]
        beyond = [by_key.get((n.member, n.version), n) for n in beyond]
    findings = []
    if too_new:
        findings.append(
            Finding(
                "portable-glibc",
                Severity.ERROR,
                f"a portable build must need glibc {floor} at most, but {wheel.name} uses {_symbols(too_new)}",
                PORTABLE_SOURCE,
                "build with the conda gcc and its sysroot (srcbuild plan shows the compiler), or without --portable",
                "build.portable",
            )
        )
    if beyond and policy is not None:
        findings.append(
            Finding(
                "portable-libstdcxx",
                Severity.WARNING,
                f"{wheel.name} needs a newer libstdc++ or libgcc_s than {policy.name} machines have "
                f"({_symbols(beyond)}): it gets the newer manylinux tag those versions allow",
                PORTABLE_SOURCE,
                "nothing to do where the target machines' gcc runtime is at least as new as the build's gcc; "
                "`srcbuild verify` shows the tag",
                "build.portable",
            )
        )
    return findings


def _symbols(needs: Sequence[Need]) -> str:
    """``memfd_create@GLIBC_2.27 (libtorch_cpu.so)``, at most five, then how many more."""
    from srcbuild.verify.manylinux import listed

    return listed(
        f"{symbol}@{need.version} ({need.library})" if symbol else need.text()
        for need in needs
        for symbol in (need.symbols or ("",))
    )
