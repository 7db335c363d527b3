"""What a recipe's builds fetch, as a list a mirror can gather (pure: from the recipe and the data).

``needs_of(recipe, packages, facts)`` answers with the git repositories at their pinned tags, the
toolchain downloads (NVIDIA's runfiles, redist archives and cuDNN archives, with the sha256 and
size the data records, chosen as a build chooses: ``toolchain.provision.choose``) and the patches.
A toolchain piece whose provider fetches through another tool (conda packages, Debian's apt) is
listed in ``not_mirrored`` with what to do instead: a mirror never claims to hold what it lacks.

Every pin the recipe makes is listed, whatever this machine has: the mirror is for another one.
``estimate`` adds the sizes the data knows (``data/git_sizes.toml`` for repositories).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from srcbuild.errors import HostError
from srcbuild.recipe.model import Recipe
from srcbuild.recipe.packages import package_spec
from srcbuild.toolchain.download import NVIDIA_HOSTS
from srcbuild.toolchain.facts import ToolchainFacts
from srcbuild.toolchain.needs import requests_for
from srcbuild.toolchain.providers.base import Offer
from srcbuild.toolchain.provision import choose

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SIZES_FILE = Path(__file__).resolve().parent / "data" / "git_sizes.toml"


@dataclass(frozen=True)
class Repo:
    url: str
    tag: str
    commit: str | None
    why: str  # "torch", "torchvision", "NCCL 2.4.8"


@dataclass(frozen=True)
class Download:
    url: str
    sha256: str
    size: int | None
    why: str  # "CUDA 9.2 (runfile)"


@dataclass(frozen=True)
class Patch:
    name: str  # as the recipe lists it: "torch/v1.7.1/0001-x.patch"
    path: Path


@dataclass(frozen=True)
class Needs:
    repos: tuple[Repo, ...]
    downloads: tuple[Download, ...]
    patches: tuple[Patch, ...]
    not_mirrored: tuple[str, ...]  # one line each: the piece, and why


def downloads_of(offer: Offer, facts: ToolchainFacts) -> tuple[list[Download], list[Repo]] | None:
    """The files an offer's provider downloads, or None when it fetches through another tool."""
    request, why = offer.request, offer.describe()
    if offer.provider == "runfile":
        runfile = facts.runfile_for(request.version)
        return ([Download(runfile.url, runfile.sha256, runfile.size, why)], []) if runfile else None
    if offer.provider == "redist":
        redist = facts.redist_for(request.version)
        if redist is None:
            return None
        return [Download(redist.url(c), c.sha256, c.size, why) for c in redist.components], []
    if offer.provider == "nvidia" and request.cuda:
        archive = facts.cudnn_for(request.version, request.cuda)
        return ([Download(archive.url, archive.sha256, archive.size, why)], []) if archive else None
    if offer.provider == "source":
        nccl = next((n for n in facts.nccl if n.tag.lstrip("v").startswith(request.version)), None)
        return ([], [Repo(nccl.repo, nccl.tag, None, why)]) if nccl else None
    return None


def needs_of(
    recipe: Recipe,
    packages: Sequence[str],
    facts: ToolchainFacts,
    prefer: Sequence[str] = (),
    sysroot: str | None = None,
) -> Needs:
    repos = []
    for name in packages:
        spec = package_spec(name)
        pin = spec.pin(recipe)
        repos.append(Repo(pin.repo, pin.tag, pin.commit, name))
    downloads: list[Download] = []
    not_mirrored: list[str] = []
    for request in requests_for(recipe, sysroot):
        try:
            offer = choose(request, facts, prefer=prefer)
        except HostError as exc:
            if request.tool != "magma":  # optional: torch builds without it
                not_mirrored.append(f"{request.label}: {exc.message}")
            continue
        got = downloads_of(offer, facts)
        if got is None:
            not_mirrored.append(
                f"{offer.describe()}: fetched by the {offer.provider} provider's own tool; "
                "install it on the target machine"
            )
            continue
        downloads += [d for d in got[0] if not any(d.url == o.url for o in downloads)]
        repos += got[1]
    patches = tuple(Patch(name, Path(path)) for name, path in zip(recipe.build.patches, recipe.build.patch_files))
    return Needs(tuple(repos), tuple(downloads), patches, tuple(not_mirrored))


def on_nvidia_site(download: Download) -> bool:
    from urllib.parse import urlparse

    return urlparse(download.url).hostname in NVIDIA_HOSTS


def git_sizes(path: Path = SIZES_FILE) -> dict[str, int]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {str(row["url"]).rstrip("/"): int(row["size"]) for row in data.get("repo", [])}


@dataclass(frozen=True)
class Estimate:
    downloads: int  # bytes the data records for the toolchain downloads
    repos: int  # bytes the data records for the repositories (an upper bound)
    unknown: tuple[str, ...]  # what the data has no size for

    @property
    def total(self) -> int:
        return self.downloads + self.repos


def estimate(needs: Needs) -> Estimate:
    sizes = git_sizes()
    unknown = [f"{d.url} ({d.why})" for d in needs.downloads if d.size is None]
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
    return Estimate(downloads, repos, tuple(unknown))
