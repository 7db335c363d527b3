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

    @property
    def command(self) -> str:
        return runtime_command(self.python, self.into)

    @property
    def install(self) -> str:
        """The pip command run with the made Python (``DIR/bin/python -m pip install ...``)."""
        rest = self.pip.split(" ", 1)[1] if self.pip.startswith("pip ") else self.pip
        return f"{self.into}/bin/python -m pip {rest}"

    def lines(self) -> list[str]:
        return [
            f"no Python {self.supported} on this machine; make one: {self.command}",
            f"then install with it: {self.install}",
        ]

    def to_json(self) -> dict[str, Any]:
        return {"python": self.python, "supported": self.supported, "command": self.command, "install": self.install}


def python_to_make(official: OfficialWheel | None, here: Collection[str] | None) -> PythonToMake | None:
    """What to make when none of the Pythons ``here`` (``"3.11"``; None: not known) runs ``official``."""
    if official is None or here is None or not official.pip or not official.python_min or not official.python_max:
        return None
    low, high = version(official.python_min), version(official.python_max)
    if any(low <= version(have) <= high for have in here):
        return None
    into = f"~/venvs/torch-{official.torch.split('+')[0]}"
    return PythonToMake(official.python_max, official.python, into, official.pip)
