"""Environment backends behind one interface, looked up by name; ``choose_backend`` picks one.

Automatic choice: a venv when the recipe's Python is the host's and pip can provide every package;
otherwise micromamba, mamba or conda when one is on PATH; otherwise the embedded py-rattler backend.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from srcbuild.envs.backends.base import EnvBackend
from srcbuild.envs.backends.conda_family import CondaFamilyBackend
from srcbuild.envs.backends.rattler_backend import RattlerBackend, rattler_available
from srcbuild.envs.backends.venv_backend import VenvBackend, venv_unsuitable
from srcbuild.envs.spec import EnvSpec
from srcbuild.errors import HostError, UsageError
from srcbuild.precedence import Chosen, from_cli, from_env, precedence

# name -> the backend's class: the one list of backends (their capabilities are class attributes)
BACKEND_CLASSES: dict[str, type[EnvBackend]] = {
    "conda": CondaFamilyBackend,
    "mamba": CondaFamilyBackend,
    "micromamba": CondaFamilyBackend,
    "rattler": RattlerBackend,
    "venv": VenvBackend,
}
BACKEND_NAMES = tuple(BACKEND_CLASSES)
CONDA_TOOLS = ("micromamba", "mamba", "conda")  # preference order when several are installed
BACKEND_VARIABLE = "SRCBUILD_ENV_BACKEND"

__all__ = [
    "BACKEND_NAMES",
    "EnvBackend",
    "backend_by_name",
    "backend_for",
    "choose_backend",
    "conda_tools_on_path",
    "installs_conda_packages",
    "pick_backend",
]


def installs_conda_packages(name: str) -> bool:
    """Whether the backend named ``name`` installs a spec's conda packages (``EnvBackend.conda_packages``)."""
    if name not in BACKEND_CLASSES:
        raise UsageError(f"unknown environment backend {name!r}", f"choose one of: {', '.join(BACKEND_NAMES)}")
    return BACKEND_CLASSES[name].conda_packages


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=environ.get("PATH", os.defpath))


def backend_by_name(
    name: str, spec: EnvSpec, environ: Mapping[str, str], tools: Mapping[str, str] | None = None
) -> EnvBackend:
    """The named backend, checked against this host (``tools``: the conda-family tools found on PATH)."""
    if name not in BACKEND_NAMES:
        raise UsageError(f"unknown environment backend {name!r}", f"choose one of: {', '.join(BACKEND_NAMES)}")
    if name in CONDA_TOOLS:
        found = tools.get(name) if tools is not None else _which(name, environ)
        if found is None:
            raise HostError(f"--env-backend {name}: {name} is not on PATH", "install it, or use --env-backend rattler")
        return CondaFamilyBackend(name, found)
    if name == "rattler":
        if not rattler_available():
            raise HostError(
                "--env-backend rattler needs py-rattler, which is not installed for this Python",
                "install py-rattler (Python >= 3.10), or use conda, mamba or micromamba",
            )
        return RattlerBackend()
    why = venv_unsuitable(spec)
    if why is not None:
        raise UsageError(f"--env-backend venv cannot make this environment: {why}", "use --env-backend rattler")
    return VenvBackend()


def conda_tools_on_path(environ: Mapping[str, str]) -> dict[str, str]:
    """The conda-family tools on ``environ``'s PATH, in preference order (a host probe)."""
    return {tool: found for tool in CONDA_TOOLS if (found := _which(tool, environ)) is not None}


def pick_backend(name: str | None, spec: EnvSpec, tools: Mapping[str, str], rattler: bool) -> EnvBackend:
    """The backend named, else the best one the probed host has: a venv when it can hold ``spec``,
    then micromamba, mamba or conda (``tools``), then py-rattler (``rattler``). Runs nothing."""
    if name:
        if name == "rattler" and not rattler:
            raise HostError(
                "--env-backend rattler needs py-rattler, which is not installed for this Python",
                "install py-rattler (Python >= 3.10), or use conda, mamba or micromamba",
            )
        if name == "rattler":
            return RattlerBackend()
        return backend_by_name(name, spec, {}, tools)
    if venv_unsuitable(spec) is None:
        return VenvBackend()
    for tool in CONDA_TOOLS:
        if tool in tools:
            return CondaFamilyBackend(tool, tools[tool])
    if rattler:
        return RattlerBackend()
    raise HostError(
        "no way to make a conda environment here: no micromamba, mamba or conda on PATH, and no py-rattler",
        "install py-rattler (pip install py-rattler, Python >= 3.10) or micromamba",
    )


def backend_for(name: str, executable: str | None) -> EnvBackend:
    """The backend a resolved build chose, by name (the choice itself is ``pick_backend``'s)."""
    if name in CONDA_TOOLS:
        return CondaFamilyBackend(name, executable)
    if name == "rattler":
        return RattlerBackend()
    if name == "venv":
        return VenvBackend()
    raise UsageError(f"unknown environment backend {name!r}", f"choose one of: {', '.join(BACKEND_NAMES)}")


def choose_backend(name: str | None, spec: EnvSpec, environ: Mapping[str, str]) -> EnvBackend:
    """The backend named (argument, then ``SRCBUILD_ENV_BACKEND``), else the best one available."""
    chosen: Chosen[str | None] = precedence(
        Chosen(None, "default"), from_env(environ, BACKEND_VARIABLE, str), from_cli(name or None, "--env-backend")
    )
    return pick_backend(chosen.value, spec, conda_tools_on_path(environ), rattler_available())
