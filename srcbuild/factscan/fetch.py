"""Fetch wheels to scan from the index pip is configured with (``pip download``: pip's own index,
proxies, certificates and constraints), one ``PROJECT==VERSION`` at a time, no dependencies."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from srcbuild.errors import NotFoundError, UsageError


def parse_spec(spec: str) -> Requirement:
    """``torch==2.15.0``: a project pinned to one version (the only form a scan fetches)."""
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise UsageError(f"--fetch {spec}: not PROJECT==VERSION ({exc})", "write e.g. --fetch torch==2.15.0") from None
    pins = [s for s in requirement.specifier if s.operator == "=="]
    if len(pins) != 1 or len(requirement.specifier) != 1:
        raise UsageError(f"--fetch {spec}: not PROJECT==VERSION", "pin one version, e.g. --fetch torch==2.15.0")
    return requirement


def download_argv(
    spec: str, dest: Path, python: str | None, platforms: Sequence[str], index_url: str | None
) -> list[str]:
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest)]
    if python:
        argv += ["--python-version", python]
    for tag in platforms:
        argv += ["--platform", tag]
    if index_url:
        argv += ["--index-url", index_url]
    return [*argv, spec]


def fetch(
    spec: str,
    dest: Path,
    env: Mapping[str, str],
    *,
    python: str | None = None,
    platforms: Sequence[str] = (),
    index_url: str | None = None,
) -> Path:
    """Download the wheel ``spec`` names into ``dest`` and return its path."""
    from srcbuild.proc import run

    requirement = parse_spec(spec)
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.glob("*.whl"))
    result = run(download_argv(spec, dest, python, platforms, index_url), env=env)
    if not result.ok:
        last = result.tail[-1] if result.tail else f"exit {result.returncode}"
        raise NotFoundError(
            f"--fetch {spec}: pip download failed: {last}",
            "check the version exists for this Python and platform (--python, --platform)",
        )
    name = canonicalize_name(requirement.name)
    (pin,) = requirement.specifier
    wanted = [
        path
        for path in sorted(dest.glob("*.whl"))
        if _matches(path, name, pin.version)
    ]
    new = [path for path in wanted if path not in before] or wanted
    if not new:
        raise NotFoundError(f"--fetch {spec}: pip downloaded no wheel of it", "pass the wheel file instead")
    return new[0]


def _matches(path: Path, name: str, version: str) -> bool:
    try:
        wheel_name, wheel_version, _, _ = parse_wheel_filename(path.name)
    except ValueError:
        return False
    return canonicalize_name(wheel_name) == name and wheel_version.public == version
