"""A portable build's last doing: retag its wheel ``manylinux_X_Y`` and describe it for the manifest.

The tag is the one the wheel's ELF symbol versions allow by auditwheel's policies
(``srcbuild.verify.manylinux``: glibc, libstdc++ and libgcc_s versions; what ``srcbuild verify``
reports); ``python -m wheel tags`` (the ``wheel`` package) writes it, rewriting
the wheel's ``WHEEL`` file and ``RECORD``. The decision that a build is portable is
``srcbuild.resolve.portable``'s.
"""

from __future__ import annotations

from pathlib import Path

from srcbuild import proc
from srcbuild.errors import StepFailed
from srcbuild.execute.dist import find_wheel
from srcbuild.execute.runner import Runner
from srcbuild.resolve import ResolvedBuild


def retag_wheel(ex: Runner, dist: Path, pattern: str, python: str, log: Path) -> None:
    """``python -m wheel tags --platform-tag manylinux_X_Y --remove WHEEL`` (a no-op when the wheel
    already carries that tag, as after a resumed build)."""
    from srcbuild.verify.manylinux import wheel_platform_tag

    wheel = find_wheel(dist, pattern)
    tag = wheel_platform_tag(wheel)
    if not tag:
        raise StepFailed(f"{wheel.name} names no Linux platform to retag", "build on Linux, or without --portable")
    argv = [python, "-m", "wheel", "tags", "--platform-tag", tag, "--remove", str(wheel)]
    result = proc.run(argv, cwd=dist, env=ex.plan.env.apply(ex.environ), log_path=log)
    if not result.ok:
        said = next((line for line in reversed(result.tail) if line.strip()), "")
        raise StepFailed(f"retagging {wheel.name} failed: {said}", f"read {log}; `{python} -m wheel version` must work")
    ex.console.print(f"    {find_wheel(dist, pattern).name}")


def portable_record(r: ResolvedBuild, wheel: Path) -> dict[str, str] | None:
    """A portable build's sysroot glibc and the platform tag its wheel carries, for the manifest."""
    if r.portable is None:
        return None
    from packaging.utils import parse_wheel_filename

    tags = sorted({t.platform for t in parse_wheel_filename(wheel.name)[3]})
    return {"sysroot_glibc": r.portable.glibc, "platform_tag": ".".join(tags)}
