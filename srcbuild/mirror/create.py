"""``srcbuild mirror create``: gather what recipes need into a mirror directory, adding only
what is missing, and write its manifest.

The git part is ``gitrepos.GitMirror``; downloads go through the toolchain's ``Downloader`` (its
resume, sha256 check and ``SRCBUILD_NVIDIA_MIRROR``) and are moved to their place under
``nvidia/``; patches are copied under ``patches/``; conda packages (the build environment's and
the toolchain's) are ``conda``'s, pip's files ``pypi``'s and the Debian packages ``debian``'s.
The manifest keeps every file's sha256, size and origin; a file already there with the size and
sha256 its manifest row records is kept.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from packaging.utils import parse_wheel_filename

from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import EnvironmentError_
from srcbuild.files import sha256_file
from srcbuild.mirror.conda import CONDA, index_channels, mirror_env
from srcbuild.mirror.debian import mirror_debian
from srcbuild.mirror.gather import Needs
from srcbuild.mirror.gitrepos import GitMirror
from srcbuild.mirror.layout import DEBIAN, PATCHES, PYPI, base_of, nvidia_path
from srcbuild.mirror.manifest import Entry, Manifest, read_manifest
from srcbuild.mirror.pypi import SIMPLE, PipSet, build_requirements, index_pypi, mirror_pip
from srcbuild.records import record
from srcbuild.sources.mirrors import MirrorRules
from srcbuild.toolchain.download import NVIDIA_HOSTS, Artifact, Downloader
from srcbuild.toolchain.facts import DebianRoute
from srcbuild.toolchain.index_files import IndexFile
from srcbuild.toolchain.providers.apt import configured_mirror

PARTIAL = ".partial"  # downloads in progress (resumed by the next run); not part of the mirror


@record
class SdistFile:
    """An extension's sdist on the index, with the sha256 the index states."""

    project: str  # normalized: "torch-scatter"
    filename: str
    url: str
    sha256: str


@record
class Target:
    """One recipe and the packages its mirror serves, with what they need."""

    recipe: str
    packages: tuple[str, ...]
    needs: Needs
    env: EnvSpec | None = None  # the build environment whose conda packages the mirror holds
    pip: tuple[PipSet, ...] = ()  # what pip installs: the environment's requirements, extensions' sdists
    toolchain_conda: tuple[tuple[EnvSpec, tuple[str, ...]], ...] = ()  # (its channel and routing, specs)
    sdists: tuple[SdistFile, ...] = ()  # extensions' sdists (their build requirements follow)
    python: str | None = None  # the recipe's Python: the build requirements' wheels are for it
    platforms: tuple[str, ...] = ()  # the other machine's wheel platforms (newest first); (): this machine's
    glibc: str | None = None  # the other machine's glibc ("2.17", from --platform): the conda solve's __glibc

    def for_target(self, pip_set: PipSet) -> PipSet:
        """``pip_set`` for the other machine's platforms (and Python) where it names none itself."""
        if not self.platforms or pip_set.platforms:
            return pip_set
        return replace(pip_set, python=pip_set.python or self.python, platforms=self.platforms)


@dataclass
class CreateReport:
    root: Path
    added_files: int = 0
    added_bytes: int = 0
    kept_files: int = 0
    sizes: dict[str, int] = field(default_factory=dict)  # "git", "nvidia", "pypi", ... -> bytes
    total: int = 0
    seconds: float = 0.0
    not_mirrored: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "dir": str(self.root),
            "added_files": self.added_files,
            "added_bytes": self.added_bytes,
            "kept_files": self.kept_files,
            "sizes": self.sizes,
            "total": self.total,
            "seconds": round(self.seconds, 2),
            "not_mirrored": self.not_mirrored,
        }


def _files_under(root: Path, top: Path) -> list[tuple[str, Path]]:
    return [(p.relative_to(root).as_posix(), p) for p in sorted(top.rglob("*")) if p.is_file()]


def _holds_route(manifest: Manifest, route: DebianRoute) -> bool:
    """The mirror holds the route's InRelease and a .deb of each of its packages."""
    if f"{DEBIAN}/dists/{route.suite}/InRelease" not in manifest.files:
        return False
    names = {rel.rsplit("/", 1)[-1].split("_", 1)[0] for rel in manifest.files if rel.endswith(".deb")}
    return all(package in names for package in route.all_packages)


def _mirror_route(
    root: Path, route: DebianRoute, environ: Mapping[str, str], log_path: Path | None, stream: IO[str] | None
) -> dict[str, Entry]:
    archive = configured_mirror()
    if archive is None:
        raise EnvironmentError_(
            f"Debian {route.suite}'s packages are wanted and this machine's apt names no Debian mirror",
            "make the mirror on a Debian machine, or choose another CUDA provider "
            "(SRCBUILD_TOOLCHAIN_PROVIDERS=redist)",
        )
    return mirror_debian(root, route, archive, root / PARTIAL / "debian", environ, log_path=log_path, echo=stream)


def _index_set(manifest: Manifest, files: Sequence[IndexFile], target: Target) -> PipSet | None:
    """The toolchain's index wheels the mirror lacks, as one hash-checked ``pip download``: the
    files srcbuild's data pins whatever the other machine is, so the platforms their names carry
    are taken too."""
    have = {e.sha256 for rel, e in manifest.files.items() if rel.startswith(SIMPLE + "/")}
    wanted = [f for f in files if f.sha256 not in have]
    if not wanted:
        return None
    why = f"the toolchain of {target.recipe}"
    pip_set = target.for_target(PipSet(tuple(f.hashed_requirement for f in wanted), hashed=True, why=why))
    if pip_set.platforms:
        named = [tag.platform for f in wanted if f.filename for tag in parse_wheel_filename(f.filename)[3]]
        pip_set = replace(pip_set, platforms=tuple(dict.fromkeys([*pip_set.platforms, *named])))
    return pip_set


def create_mirror(
    root: Path,
    targets: Sequence[Target],
    rules: MirrorRules,
    environ: Mapping[str, str],
    *,
    nvidia_mirror: str | None = None,
    stream: IO[str] | None = None,
    log_path: Path | None = None,
) -> CreateReport:
    started = time.monotonic()
    root.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(base_of(str(root))) or Manifest()
    before = dict(manifest.files)
    report = CreateReport(root)
    git = GitMirror(root, rules, environ, log_path, stream)
    downloader = Downloader(root / PARTIAL, mirror=nvidia_mirror, stream=stream)
    for target in targets:
        for repo in target.needs.repos:
            if repo.tag:
                git.add_tag(repo.url, repo.tag, repo.commit)
            elif repo.commit:  # a git source pinned by its commit alone (an extension's)
                git.add_commit(repo.url, repo.commit)
        for download in target.needs.downloads:
            rel = nvidia_path(download.url, NVIDIA_HOSTS)
            if rel is None:
                report.not_mirrored.append(f"{download.url} ({download.why}): not on NVIDIA's site")
                continue
            kept = manifest.files.get(rel)
            path = root / rel
            if kept and kept.sha256 == download.sha256 and path.is_file() and path.stat().st_size == kept.size:
                continue
            fetched = downloader.fetch(Artifact(download.url, download.sha256, download.size))
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(fetched.path, path)
            manifest.files[rel] = Entry(download.sha256, path.stat().st_size, download.url)
        for patch in target.needs.patches:
            rel = f"{PATCHES}/{patch.name}"
            digest = sha256_file(patch.path)
            kept = manifest.files.get(rel)
            if not (kept and kept.sha256 == digest and (root / rel).is_file()):
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(patch.path, root / rel)
                manifest.files[rel] = Entry(digest, (root / rel).stat().st_size, f"patch {patch.name}")
        if target.env is not None:
            try:
                manifest.files.update(
                    mirror_env(root, target.env, root / PARTIAL / "conda", log_path, stream, glibc=target.glibc)
                )
            except EnvironmentError_ as exc:
                exc.hint = f"{exc.hint}; or leave the environment out with --no-env"
                raise
        for spec, specs in target.toolchain_conda:
            try:
                manifest.files.update(
                    mirror_env(root, spec, root / PARTIAL / "conda", log_path, stream, specs, glibc=target.glibc)
                )
            except EnvironmentError_ as exc:
                exc.hint = f"{exc.hint}; or leave that piece out with --skip TOOL (the other machine has it)"
                raise
        for route in target.needs.debian:
            if not _holds_route(manifest, route):
                manifest.files.update(_mirror_route(root, route, environ, log_path, stream))
        index = _index_set(manifest, target.needs.index, target)
        sets = [index] if index else []
        for sdist in target.sdists:
            rel = f"{SIMPLE}/{sdist.project}/{sdist.filename}"
            kept = manifest.files.get(rel)
            if not (kept and kept.sha256 == sdist.sha256 and (root / rel).is_file()):
                fetched = downloader.fetch(Artifact(sdist.url, sdist.sha256, None))
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(fetched.path, root / rel)
                manifest.files[rel] = Entry(sdist.sha256, (root / rel).stat().st_size, sdist.url)
            requires = build_requirements(root / rel)
            if requires:
                sets.append(PipSet(requires, python=target.python, why=f"the build requirements of {sdist.filename}"))
        for pip_set in [*sets, *target.pip]:
            pip_set = target.for_target(pip_set)
            manifest.files.update(mirror_pip(root, pip_set, root / PARTIAL / "pip", environ, log_path, stream))
        report.not_mirrored += [line for line in target.needs.not_mirrored if line not in report.not_mirrored]
        manifest.providers += [p for _, p in target.needs.providers if p not in manifest.providers]
        made = manifest.made_for.setdefault(target.recipe, [])
        made += [p for p in target.packages if p not in made]
    git.finish()
    if any(t.env is not None or t.toolchain_conda for t in targets) and (root / CONDA).is_dir():
        index_channels(root)
        for rel, path in _files_under(root, root / CONDA):  # the indexes it wrote (the packages are listed)
            if rel not in manifest.files or path.name.startswith("repodata"):
                manifest.files[rel] = Entry(sha256_file(path), path.stat().st_size, "rattler index")
    for changed in sorted(git.changed):  # its files changed (a new pack, new refs): list them again
        prefix = changed.relative_to(root).as_posix() + "/"
        for rel in [r for r in manifest.files if r.startswith(prefix)]:
            del manifest.files[rel]
        origin = "git " + prefix[len("git/") : -1]
        for rel, path in _files_under(root, changed):
            manifest.files[rel] = Entry(sha256_file(path), path.stat().st_size, origin)
    for rel in [r for r in manifest.files if r.startswith(SIMPLE + "/") and r.endswith("index.html")]:
        del manifest.files[rel]  # written anew from the files below
    if any(r.startswith(PYPI + "/") for r in manifest.files):
        manifest.files.update(index_pypi(root, manifest.files))
    manifest.git_hosts = sorted({*manifest.git_hosts, *(h for h in git.hosts if h)})
    manifest.write(root)
    shutil.rmtree(root / PARTIAL, ignore_errors=True)
    for rel, entry in manifest.files.items():
        old = before.get(rel)
        if old is not None and old.sha256 == entry.sha256:
            report.kept_files += 1
        else:
            report.added_files += 1
            report.added_bytes += entry.size
        kind = rel.split("/", 1)[0]
        report.sizes[kind] = report.sizes.get(kind, 0) + entry.size
    report.total = manifest.size
    report.seconds = time.monotonic() - started
    return report


__all__ = ["CreateReport", "Target", "create_mirror"]
