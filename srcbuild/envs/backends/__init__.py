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

BACKEND_NAMES = ("conda", "mamba", "micromamba", "rattler", "venv")
CONDA_TOOLS = ("micromamba", "mamba", "conda")  # preference order when several are installed
BACKEND_VARIABLE = "SRCBUILD_ENV_BACKEND"

__all__ = ["BACKEND_NAMES", "EnvBackend", "backend_by_name", "choose_backend"]


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=environ.get("PATH", os.defpath))


def backend_by_name(name: str, spec: EnvSpec, environ: Mapping[str, str]) -> EnvBackend:
    """The named backend, checked against this host and this spec."""
    if name not in BACKEND_NAMES:
        raise UsageError(f"unknown environment backend {name!r}", f"choose one of: {', '.join(BACKEND_NAMES)}")
    if name in CONDA_TOOLS:
        found = _which(name, environ)
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


def choose_backend(name: str | None, spec: EnvSpec, environ: Mapping[str, str] | None = None) -> EnvBackend:
    """The backend named (argument, then ``SRCBUILD_ENV_BACKEND``), else the best one available."""
    env = os.environ if environ is None else environ
    chosen = name or env.get(BACKEND_VARIABLE) or None
    if chosen:
        return backend_by_name(chosen, spec, env)
    if venv_unsuitable(spec) is None:
        return VenvBackend()
    for tool in CONDA_TOOLS:
        found = _which(tool, env)
        if found is not None:
            return CondaFamilyBackend(tool, found)
    if rattler_available():
        return RattlerBackend()
    raise HostError(
        "no way to make a conda environment here: no micromamba, mamba or conda on PATH, and no py-rattler",
        "install py-rattler (pip install py-rattler, Python >= 3.10) or micromamba",
    )
