"""``srcbuild install NAME --recipe R --into ENV`` for an extension: the cached wheel built for the
recipe against the very torch the environment has.

The environment's torch is read (version and ``torch.version.cuda``) and the newest cache entry
is chosen whose key names this extension, this recipe, that torch version and the environment's
Python ABI, and whose measured kernels serve the recipe's archs: first in the local cache, then
in each remote in order (the same remotes and signatures as torch wheels: a remote entry is
pulled only when a trusted signer vouches for it, and its wheel only when its sha256 matches,
``cache.transfer.pull_entry``). pip installs the wheel in hash-checking mode (the manifest's
sha256, as ``srcbuild install torch`` does), then its dependencies with a constraints file
pinning the environment's torch, so pip never replaces it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from srcbuild import proc
from srcbuild.cache.install import deps_failed, pip_install_hashed, wheel_requires
from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes import CacheRemote
from srcbuild.cache.signing import TrustPolicy
from srcbuild.cache.store import CacheEntry, Warn, WheelCache, serves, warn_stderr
from srcbuild.cache.transfer import pull_entry
from srcbuild.errors import EnvironmentError_, NotFoundError, SrcbuildError, UsageError
from srcbuild.ext.key import KIND
from srcbuild.ext.knowledge import normalize
from srcbuild.recipe import Recipe
from srcbuild.records import record

TORCH_PROBE = (
    "import json, sys, torch; from importlib import metadata; print(json.dumps({'version': torch.__version__, "
    "'dist': metadata.version('torch'), 'cuda': torch.version.cuda, 'abi': 'cp%d%d' % sys.version_info[:2]}))"
)


@record
class ExtInstall:
    name: str
    recipe: str
    wheel: Path
    python: Path
    torch: str
    installed: bool
    origin: str = "local"  # "local" or the remote's URL

    def to_json(self) -> dict[str, Any]:
        return {"package": self.name, "recipe": self.recipe, "wheel": str(self.wheel), "python": str(self.python),
                "torch": self.torch, "installed": self.installed, "origin": self.origin}


def env_torch(python: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    """The torch ``python`` imports: version, CUDA and the interpreter's ABI tag."""
    out = proc.probe([str(python), "-c", TORCH_PROBE], env=environ, timeout=300)
    try:
        data: dict[str, Any] = json.loads((out or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        data = {}
    if "version" not in data:
        raise EnvironmentError_(
            f"{python} cannot import torch, so no extension built against a torch can be chosen for it",
            "install torch there first (srcbuild install torch --recipe R --into ENV, or pip install torch==V)",
        )
    return data


def wanted(m: Manifest, name: str, recipe: Recipe, torch_version: str, abi: str) -> bool:
    """Whether ``m`` is ``name`` built for ``recipe`` against ``torch_version`` for ``abi``, with kernels
    for the recipe's archs (and not from modified sources)."""
    inputs = m.key_inputs
    requested = list(recipe.gpu.arch) if recipe.toolchain.cuda else []
    # a build against a wheel keys its metadata version (2.0.1), one against an environment
    # torch.__version__ (2.0.1+cu117, which the wheel of the index reports): "A|B" accepts either
    return (
        inputs.get("kind") == KIND and inputs.get("package") == name and m.recipe.get("name") == recipe.name
        and inputs.get("torch") in torch_version.split("|") and inputs.get("python_abi") == abi
        and serves(m, requested) and not m.modified
    )


def candidates(cache: WheelCache, name: str, recipe: Recipe, torch_version: str, abi: str) -> list[CacheEntry]:
    """Entries of ``name`` built for ``recipe`` against ``torch_version`` for ``abi``, newest first."""
    out = [e for e in cache.entries() if wanted(e.manifest, name, recipe, torch_version, abi)]
    return sorted(out, key=lambda e: e.manifest.created, reverse=True)


def pull_from_remotes(
    cache: WheelCache,
    remotes: Sequence[CacheRemote],
    name: str,
    recipe: Recipe,
    torch_version: str,
    abi: str,
    trust: TrustPolicy,
    warn: Warn | None = warn_stderr,
) -> tuple[CacheEntry, str] | tuple[None, SrcbuildError | None]:
    """The newest wanted entry of the first remote that has one, pulled into ``cache`` (signature and
    sha256 checked); else (None, the first refusal). An unreadable remote is a warning."""
    refused: SrcbuildError | None = None
    for remote in remotes:
        try:
            found = [m for m in remote.manifests() if wanted(m, name, recipe, torch_version, abi)]
        except SrcbuildError as exc:
            if warn is not None:
                warn(f"remote {remote.url} skipped: {exc.message}")
            continue
        for manifest in sorted(found, key=lambda m: m.created, reverse=True):
            try:
                return pull_entry(cache, remote, manifest, trust), remote.url
            except SrcbuildError as exc:
                refused = refused or exc
    return None, refused


def install_ext(
    cache: WheelCache,
    recipe: Recipe,
    name: str,
    python: Path,
    environ: Mapping[str, str],
    echo: IO[str] | None = None,
    dry_run: bool = False,
    no_deps: bool = False,
    remotes: Sequence[CacheRemote] = (),
    trust: TrustPolicy | None = None,
    warn: Warn | None = warn_stderr,
) -> ExtInstall:
    """Find (locally, then in ``remotes``), check and install the extension built against ``python``'s torch."""
    project = normalize(name)
    torch = env_torch(python, environ)
    version, abi = str(torch["version"]), str(torch["abi"])
    dist = str(torch.get("dist") or version)  # what pip calls the installed torch
    found = candidates(cache, project, recipe, f"{version}|{dist}", abi)
    entry: CacheEntry | None = found[0] if found else None
    origin = "local"
    if entry is None and remotes:
        policy = trust or TrustPolicy.resolve(environ=environ)
        entry, got = pull_from_remotes(cache, remotes, project, recipe, f"{version}|{dist}", abi, policy, warn)
        if entry is None and isinstance(got, SrcbuildError):
            raise got  # a remote had it, but nobody may vouch for it or it arrived damaged
        origin = got if isinstance(got, str) else origin
    if entry is None:
        where = str(cache.root) + "".join(f", {r.url}" for r in remotes)
        raise NotFoundError(
            f"no cached {project} of recipe {recipe.name} built against torch {version} for {abi} in {where}",
            f"build it: srcbuild ext {project} --recipe {recipe.path or recipe.name} --env {python.parent.parent}"
            + ("" if remotes else ", or add the remote that has it with --remote"),
        )
    entry.check()  # a wheel changed on disk since it was stored is never installed
    if dry_run:
        return ExtInstall(project, recipe.name, entry.wheel_path, python, version, False, origin)
    _pip_install(python, entry, dist, no_deps, environ, echo)
    return ExtInstall(project, recipe.name, entry.wheel_path, python, version, True, origin)


def _pip_install(
    python: Path, entry: CacheEntry, torch: str, no_deps: bool, environ: Mapping[str, str], echo: IO[str] | None
) -> None:
    """The wheel in uv's (or pip's) hash-checking mode, then pip its dependencies with torch pinned."""
    from srcbuild.cache.installer import uv_binary

    manifest = entry.manifest
    pip_install_hashed(python, manifest, entry.wheel_path, echo, environ, uv=uv_binary(environ))
    requires = [] if no_deps else wheel_requires(entry.wheel_path, manifest.wheel)
    if not requires:
        return
    with tempfile.TemporaryDirectory(prefix="srcbuild-install-") as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text(f"torch=={torch}\n", encoding="utf-8")
        argv = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-c", str(constraints)]
        result = proc.run([*argv, *requires], env=environ, echo=echo)
    if not result.ok:
        raise deps_failed(manifest, result)


def check_name(name: str) -> str:
    """A package name ``install`` takes for an extension (any project name pip accepts)."""
    project = normalize(name)
    if not project or not all(c.isalnum() or c == "-" for c in project):
        from srcbuild.packages import PACKAGES

        raise UsageError(f"{name!r} is not a package name", f"name a package: {', '.join(PACKAGES)} or an extension")
    return project
