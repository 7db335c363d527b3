"""Solving an environment spec with py-rattler, and saying in plain words why a solve failed.

``solve_spec`` asks rattler's solver for the spec's conda packages on linux-64 (and noarch), through
the spec's channel routing, with a repodata cache under the work dir. It returns ``LockedPackage``s
with canonical URLs: the same list a lockfile holds. ``explain_solve_error`` turns rattler's
``SolverError`` text into one sentence naming the package and the constraint that failed; the raw
solver text only goes to the log.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from srcbuild.envs.lockfile import LockedPackage
from srcbuild.envs.spec import EnvSpec, package_name
from srcbuild.errors import EnvironmentError_
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_TREE = re.compile(r"^[\s│├└─]+")


@record
class SolveExplanation:
    package: str  # the package whose constraint failed
    message: str
    hint: str


def explain_solve_error(text: str, channels: Sequence[str], requested: Sequence[str] = ()) -> SolveExplanation:
    """One line from rattler's solver report: which package, which constraint.

    ``requested`` (the specs asked for) lets a dependency that no candidate satisfies be named as
    a conflict with the request on the same package, rather than as missing from the channels.
    """
    body = text.split("because of:", 1)[-1].strip()
    first = body.splitlines()[0].strip() if body else text.strip()
    where = ", ".join(channels) or "the configured channels"
    missing = re.match(r"No candidates were found for (.+?)\.?$", first)
    if missing:
        spec = missing.group(1).strip().removesuffix(" *")
        name = package_name(spec)
        return SolveExplanation(
            name,
            f"no package in {where} matches `{spec}`",
            f"check the version of {name} the recipe asks for, or add a channel (or mirror) that has it",
        )
    asked = {package_name(s): s for s in requested}
    top = re.match(r"(.+?) cannot be installed because", first)
    wanted = top.group(1).strip().removesuffix(" *") if top else first
    steps = [_TREE.sub("", line).strip() for line in body.splitlines()[1:] if _TREE.match(line)]
    steps = [s for s in steps if s]
    leaf_package = package_name(wanted)
    reasons: list[str] = []  # one per candidate the solver tried: "cmake 4.0.2 needs `libuv >=1.48`, which ..."
    subject = ""
    for step in steps:
        needs = re.match(r"(.+?) would require$", step)
        if needs:
            subject = f"{needs.group(1)} needs"
            continue
        lacking = re.match(r"(.+?), for which no candidates were found\.?$", step)
        conflict = re.match(r"(.+?), which conflicts with (.+?)\.?$", step)
        if lacking:
            spec = lacking.group(1)
            other = asked.get(package_name(spec))
            if other is not None and other != spec and package_name(wanted) != package_name(spec):
                why = f"which conflicts with the requested `{other}`"
            else:
                why = f"which no package in {where} provides"
        elif conflict:
            spec, why = conflict.group(1), f"which conflicts with `{conflict.group(2)}`"
        else:
            continue
        if not reasons:
            leaf_package = package_name(spec)
        reasons.append(f"{subject} `{spec}`, {why}".strip())
    if reasons:
        detail = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
    else:
        detail = " ".join(steps[:2]) or "no combination of versions satisfies every constraint"
    return SolveExplanation(
        leaf_package,
        f"cannot install `{wanted}`: {detail}",
        f"relax the constraint on {leaf_package} (recipe [env] table or build pins), or add a channel that has a "
        "matching version; the solver's full report is in the log",
    )


def _locked(record: object, spec: EnvSpec) -> LockedPackage:
    url = str(record.url)  # type: ignore[attr-defined]
    return LockedPackage(
        name=str(record.name.normalized),  # type: ignore[attr-defined]
        version=str(record.version),  # type: ignore[attr-defined]
        url=spec.routing.canonical_url(url, spec.channels),
        sha256=bytes(record.sha256).hex() if record.sha256 else "",  # type: ignore[attr-defined]
        md5=bytes(record.md5).hex() if record.md5 else "",  # type: ignore[attr-defined]
        dependencies=tuple(str(d) for d in record.depends),  # type: ignore[attr-defined]
        platform=spec.platform,
    )


VIRTUAL_DATA = Path(__file__).resolve().parent / "data" / "virtual_packages.toml"


def portable_virtual_packages(platform: str) -> dict[str, str]:
    """The virtual packages a lockfile's solve assumes on ``platform`` (``data/virtual_packages.toml``:
    ``{"__glibc": "2.28", ...}``), values as "version" or "version=build"."""
    table = tomllib.loads(VIRTUAL_DATA.read_text(encoding="utf-8")).get(platform, {})
    return {str(name): str(value) for name, value in table.items()}


def virtual_package_specs(
    spec: EnvSpec, for_this_host: bool, glibc: str | None = None
) -> list[tuple[str, str, str]]:
    """(name, version, build) of the virtual packages to solve with.

    For this host: what rattler detects here. For a lockfile: the portable defaults in
    ``data/virtual_packages.toml``, with ``__glibc`` at ``glibc`` when another machine's is known
    (``mirror create --platform``). Either way ``__cuda`` is the recipe's CUDA version: a build
    machine compiles for that CUDA whether or not it has a driver.
    """
    out: list[tuple[str, str, str]] = []
    if for_this_host:
        import rattler

        for detected in rattler.VirtualPackage.detect():
            generic = detected.into_generic()
            out.append((str(generic.name.normalized), str(generic.version), str(generic.build_string)))
    else:
        for name, value in portable_virtual_packages(spec.platform).items():
            version, _, build = str(value).partition("=")
            out.append((name, version, build or "0"))
        if glibc is not None:
            out = [(n, glibc, b) if n == "__glibc" else (n, v, b) for n, v, b in out]
    out = [v for v in out if v[0] != "__cuda"]
    if spec.cuda:
        out.append(("__cuda", spec.cuda, "0"))
    return out


def _virtual_packages(specs: list[tuple[str, str, str]]) -> list[object]:
    from rattler import GenericVirtualPackage, PackageName, Version
    from rattler.package import BuildString

    return [GenericVirtualPackage(PackageName(n), Version(v), BuildString(b)) for n, v, b in specs]


def solve_spec(
    spec: EnvSpec,
    repodata_cache: Path,
    log_path: Path | None = None,
    for_this_host: bool = True,
    specs: Sequence[str] | None = None,
    glibc: str | None = None,
) -> list[LockedPackage]:
    """Solve the spec's conda packages; an unsatisfiable spec is an EnvironmentError_ in plain words.

    ``for_this_host`` solves for this machine's virtual packages; ``False`` (lockfiles) for the
    portable defaults. ``specs`` replaces the spec's own match specs (a toolchain piece's packages
    on the spec's channels, for a mirror). ``glibc``: the other machine's, for a portable solve.
    """
    wanted = list(spec.conda_specs if specs is None else specs)
    import rattler
    from rattler.exceptions import SolverError

    virtual = virtual_package_specs(spec, for_this_host, glibc)
    log_line(log_path, "virtual packages: " + ", ".join(f"{n}={v}={b}" for n, v, b in virtual))

    channels = [rattler.Channel(spec.routing.base_url(c)) for c in spec.channels]
    gateway = rattler.Gateway(cache_dir=repodata_cache, show_progress=False)

    async def run() -> list[object]:
        return list(
            await rattler.solve(
                sources=channels,
                specs=wanted,
                gateway=gateway,
                platforms=[spec.platform, "noarch"],  # type: ignore[list-item]
                virtual_packages=_virtual_packages(virtual),  # type: ignore[arg-type]
            )
        )

    import asyncio  # only when solving: the event loop costs every command 10 ms to import

    try:
        records = asyncio.run(run())
    except SolverError as exc:
        log_line(log_path, f"solver report for {wanted}:\n{exc}")
        why = explain_solve_error(str(exc), spec.channels, wanted)
        raise EnvironmentError_(f"environment cannot be solved: {why.message}", why.hint) from None
    except Exception as exc:  # rattler raises its own exception types for fetch/parse failures
        log_line(log_path, f"repodata fetch failed: {type(exc).__name__}: {exc}")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EnvironmentError_(
            f"cannot read the channels {', '.join(spec.routing.route(c) for c in spec.channels)}: {first}",
            "check the network or give a reachable mirror with --channel-mirror NAME=URL or --channel-alias URL",
        ) from None
    packages = [_locked(r, spec) for r in records]
    log_line(log_path, "solved:\n" + "\n".join(f"  {p.label} {p.url}" for p in packages))
    return sorted(packages, key=lambda p: p.name)


def log_line(log_path: Path | None, text: str) -> None:
    if log_path is None:
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(text.rstrip("\n") + "\n")
