"""An answer's Python: whether this machine has one that the official wheel supports, and when it
has none, the commands that make one (``srcbuild env runtime``) and install the wheel with it.

``recommend`` and ``compat`` answer with a pip command; a GT 750M's is for Python 3.5 to 3.7, which
a current distribution does not carry. The Python made is the newest the wheel supports, in
``~/venvs/torch-VERSION``; its pip then installs the wheel.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from srcbuild.advice.window import OfficialWheel, version
from srcbuild.envs.runtime import runtime_command
from srcbuild.records import record


@record
class PythonToMake:
    """The Python an official wheel needs and this machine lacks, and where to make it."""

    python: str  # "3.7"
    supported: str  # "3.5 to 3.7"
    into: str  # "~/venvs/torch-1.3.0" (pasted into a shell, which expands the ~)
    pip: str  # the wheel's pip command, run with the made Python
    have: bool = False  # the machine has such a Python, but no environment is active for pip to install into

    @property
    def command(self) -> str:
        return runtime_command(self.python, self.into)

    @property
    def install(self) -> str:
        """The pip command run with the made Python (``DIR/bin/python -m pip install ...``)."""
        rest = self.pip.split(" ", 1)[1] if self.pip.startswith("pip ") else self.pip
        return f"{self.into}/bin/python -m pip {rest}"

    def lines(self) -> list[str]:
        first = (
            f"pip installs into an environment, and none is active; make one: {self.command}"
            if self.have
            else f"no Python {self.supported} on this machine; make one: {self.command}"
        )
        return [first, f"then install with it: {self.install}"]

    def to_json(self) -> dict[str, Any]:
        return {"python": self.python, "supported": self.supported, "command": self.command, "install": self.install}


def python_to_make(
    official: OfficialWheel | None, here: Collection[str] | None, active: Collection[str] | None = None
) -> PythonToMake | None:
    """What to make when none of the Pythons ``here`` (``"3.11"``; None: not known) runs ``official``,
    or, when one does but the active environment's Pythons (``active``: empty when none is active,
    None when not looked at) do not, the environment to make with it: pip installs into an
    environment, never into the system's Python (PEP 668)."""
    if official is None or here is None or not official.pip or not official.python_min or not official.python_max:
        return None
    low, high = version(official.python_min), version(official.python_max)
    into = f"~/venvs/torch-{official.torch.split('+')[0]}"
    fitting = sorted((have for have in here if low <= version(have) <= high), key=version)
    if fitting:
        if active is None or any(low <= version(have) <= high for have in active):
            return None
        return PythonToMake(fitting[-1], official.python, into, official.pip, have=True)
    return PythonToMake(official.python_max, official.python, into, official.pip)
