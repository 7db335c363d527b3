"""What a recipe's builds fetch, as a list a mirror can gather (pure: from the recipe and the data).

``needs_of(recipe, packages, facts)`` answers with the git repositories at their pinned tags, the
toolchain downloads (NVIDIA's runfiles, redist archives and cuDNN archives, with the sha256 and
size the data records, chosen as a build chooses: ``toolchain.provision.choose``), the package
index wheels the toolchain takes (the ``pypi`` provider's cuDNN and NCCL, the Debian route's
NVIDIA component wheels), the Debian route's packages, the conda packages of the ``conda``
provider's pieces (gcc, MPI, MAGMA, CUDA) and the patches. A piece no provider can serve is listed
in ``not_mirrored``: a mirror never claims to hold what it lacks.

Every pin the recipe makes is listed, whatever this machine has: the mirror is for another one.
``estimate`` adds the sizes the data knows (``data/git_sizes.toml`` for repositories).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from srcbuild.errors import HostError
from srcbuild.packages import package_spec
from srcbuild.recipe.model import Recipe
from srcbuild.records import record
from srcbuild.toolchain.facts import DebianRoute, ToolchainFacts
from srcbuild.toolchain.fetches import CondaPiece, Download, Fetches
from srcbuild.toolchain.index_files import IndexFile
from srcbuild.toolchain.needs import requests_for
from srcbuild.toolchain.providers import PROVIDERS
from srcbuild.toolchain.providers.base import Offer
from srcbuild.toolchain.provision import choose

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SIZES_FILE = Path(__file__).resolve().parent / "data" / "git_sizes.toml"


@record
class Repo:
    url: str
    tag: str  # "" for a source pinned by its commit alone (an extension's git+URL@COMMIT)
    commit: str | None
    why: str  # "torch", "torchvision", "NCCL 2.4.8", "extension torch-scatter"

    @property
    def ref(self) -> str:
        return self.tag or self.commit or ""


@record
class Patch:
    name: str  # as the recipe lists it: "torch/v1.7.1/0001-x.patch"
    path: Path


@record
class Needs:
    repos: tuple[Repo, ...]
    downloads: tuple[Download, ...]
    patches: tuple[Patch, ...]
    not_mirrored: tuple[str, ...]  # one line each: the piece, and why
    index: tuple[IndexFile, ...] = ()  # wheels of the package index (sha256-pinned)
    debian: tuple[DebianRoute, ...] = ()  # Debian packages apt fetches
    conda: tuple[CondaPiece, ...] = ()  # conda packages of toolchain pieces
    providers: tuple[tuple[str, str], ...] = ()  # (tool, provider) of each piece gathered


def fetches_of(offer: Offer, facts: ToolchainFacts) -> Fetches | None:
    """What an offer's provider fetches (each provider answers for itself), or None when the data does not say."""
    return PROVIDERS[offer.provider].fetches(offer, facts)


def needs_of(
    recipe: Recipe,
    packages: Sequence[str],
    facts: ToolchainFacts,
    prefer: Sequence[str] = (),
    sysroot: str | None = None,
    skip: Sequence[str] = (),
) -> Needs:
    """What ``recipe``'s builds of ``packages`` fetch; the toolchain pieces in ``skip`` (the other
    machine has them) are named in ``not_mirrored``."""
    repos = []
    for name in packages:
        spec = package_spec(name)
        pin = spec.pin(recipe)
        repos.append(Repo(pin.repo, pin.tag, pin.commit, name))
    downloads: list[Download] = []
    index: list[IndexFile] = []
    debian: list[DebianRoute] = []
    conda: list[CondaPiece] = []
    providers: list[tuple[str, str]] = []
    not_mirrored: list[str] = []
    for request in requests_for(recipe, sysroot):
        if request.tool in skip:
            not_mirrored.append(f"{request.label}: left out (--skip {request.tool})")
            continue
        try:
            offer = choose(request, facts, prefer=prefer)
        except HostError as exc:
            if request.tool != "magma":  # optional: torch builds without it
                not_mirrored.append(f"{request.label}: {exc.message}")
            continue
        got = fetches_of(offer, facts)
        if got is None:
            not_mirrored.append(f"{offer.describe()}: srcbuild's data names no files for it")
            continue
        downloads += [d for d in got.downloads if not any(d.url == o.url for o in downloads)]
        repos += [Repo(r.url, r.tag, None, r.why) for r in got.repos]
        index += [f for f in got.index if f not in index]
        debian += [r for r in got.debian if r not in debian]
        conda += got.conda
        providers.append((request.tool, offer.provider))
    patches = tuple(Patch(name, Path(path)) for name, path in zip(recipe.build.patches, recipe.build.patch_files))
    return Needs(
        tuple(repos),
        tuple(downloads),
        patches,
        tuple(not_mirrored),
        tuple(index),
        tuple(debian),
        tuple(conda),
        tuple(providers),
    )


def git_sizes(path: Path = SIZES_FILE) -> dict[str, int]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {str(row["url"]).rstrip("/"): int(row["size"]) for row in data.get("repo", [])}


@record
class Estimate:
    downloads: int  # bytes the data records for the toolchain downloads from NVIDIA's site
    repos: int  # bytes the data records for the repositories (an upper bound)
    unknown: tuple[str, ...]  # what the data has no size for
    index: int = 0  # bytes of the package-index wheels the toolchain takes
    debian: int = 0  # bytes of the Debian packages (the route's size less its wheels)

    @property
    def total(self) -> int:
        return self.downloads + self.repos + self.index + self.debian


def estimate(needs: Needs) -> Estimate:
    sizes = git_sizes()
    unknown = [f"{d.url} ({d.why})" for d in needs.downloads if d.size is None]
    unknown += [f"{f.requirement} (package index)" for f in needs.index if f.size is None]
    index = sum(f.size or 0 for f in needs.index)
    debian = 0
    for route in needs.debian:
        if route.download_size is None:
            unknown.append(f"Debian {route.suite}: {' '.join(route.all_packages)}")
        else:
            debian += max(route.download_size - sum(w.size or 0 for w in route.wheels), 0)
    unknown += [f"{piece.why}: {' '.join(piece.specs)} (the channel's solve)" for piece in needs.conda]
    repos = 0
    seen = set()
    for repo in needs.repos:
        key = repo.url.rstrip("/").removesuffix(".git")
        if key in seen:
            continue
        seen.add(key)
        if key in sizes:
            repos += sizes[key]
        else:
            unknown.append(f"{repo.url} ({repo.why})")
    downloads = sum(d.size or 0 for d in needs.downloads)
    return Estimate(downloads, repos, tuple(unknown), index, debian)
