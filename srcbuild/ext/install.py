"""``srcbuild install NAME --recipe R --into ENV`` for an extension: the cached wheel built for the
recipe against the very torch the environment has.

The environment's torch is read (version and ``torch.version.cuda``) and the newest cache entry
is chosen whose key names this extension, this recipe, that torch version and the environment's
Python ABI, and whose measured kernels serve the recipe's archs. pip installs it with a
constraints file pinning the environment's torch, so pip never replaces it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from srcbuild import proc
from srcbuild.cache.store import CacheEntry, WheelCache, serves
from srcbuild.errors import EnvironmentError_, NotFoundError, StepFailed, UsageError
from srcbuild.ext.key import KIND
from srcbuild.ext.knowledge import normalize
from srcbuild.recipe import Recipe

TORCH_PROBE = (
    "import json, sys, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, "
    "'abi': 'cp%d%d' % sys.version_info[:2]}))"
)


@dataclass(frozen=True)
class ExtInstall:
    name: str
    recipe: str
    wheel: Path
    python: Path
    torch: str
    installed: bool

    def to_json(self) -> dict[str, Any]:
        return {"package": self.name, "recipe": self.recipe, "wheel": str(self.wheel), "python": str(self.python),
                "torch": self.torch, "installed": self.installed}


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


def candidates(cache: WheelCache, name: str, recipe: Recipe, torch_version: str, abi: str) -> list[CacheEntry]:
    """Entries of ``name`` built for ``recipe`` against ``torch_version`` for ``abi``, newest first."""
    requested = list(recipe.gpu.arch) if recipe.toolchain.cuda else []
    out = []
    for entry in cache.entries():
        m, inputs = entry.manifest, entry.manifest.key_inputs
        if inputs.get("kind") != KIND or inputs.get("package") != name or m.recipe.get("name") != recipe.name:
            continue
        if inputs.get("torch") != torch_version or inputs.get("python_abi") != abi or not serves(m, requested):
            continue
        out.append(entry)
    return sorted(out, key=lambda e: e.manifest.created, reverse=True)


def install_ext(
    cache: WheelCache,
    recipe: Recipe,
    name: str,
    python: Path,
    environ: Mapping[str, str],
    echo: IO[str] | None = None,
    dry_run: bool = False,
    no_deps: bool = False,
) -> ExtInstall:
    project = normalize(name)
    torch = env_torch(python, environ)
    found = candidates(cache, project, recipe, str(torch["version"]), str(torch["abi"]))
    if not found:
        raise NotFoundError(
            f"no cached {project} of recipe {recipe.name} built against torch {torch['version']} "
            f"for {torch['abi']} in {cache.root}",
            f"build it: srcbuild ext {project} --recipe {recipe.path or recipe.name} "
            f"--env {python.parent.parent}",
        )
    entry = found[0]
    entry.check()  # a wheel changed on disk since it was stored is never installed
    if dry_run:
        return ExtInstall(project, recipe.name, entry.wheel_path, python, str(torch["version"]), False)
    with tempfile.TemporaryDirectory(prefix="srcbuild-install-") as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text(f"torch=={torch['version']}\n", encoding="utf-8")
        argv = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-c", str(constraints)]
        if no_deps:
            argv.append("--no-deps")
        result = proc.run([*argv, str(entry.wheel_path)], env=environ, echo=echo)
    if not result.ok:
        tail = "\n".join(result.tail[-5:])
        raise StepFailed(
            f"pip could not install {entry.manifest.wheel} into {python} (exit {result.returncode}):\n{tail}",
            "read pip's message above; the cached wheel itself is intact",
        )
    return ExtInstall(project, recipe.name, entry.wheel_path, python, str(torch["version"]), True)


def check_name(name: str) -> str:
    """A package name ``install`` takes for an extension (any project name pip accepts)."""
    project = normalize(name)
    if not project or not all(c.isalnum() or c == "-" for c in project):
        raise UsageError(f"{name!r} is not a package name", "name a package: torch, torchvision or an extension")
    return project
