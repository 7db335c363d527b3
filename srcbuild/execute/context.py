"""What the handlers of a build need besides the plan and the records of earlier steps: the
resolved build the plan was made from (``BuildContext``; an extension build's ``ExtContext``
extends it)."""

from __future__ import annotations

from dataclasses import dataclass

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe
from srcbuild.resolve import ResolvedBuild


@dataclass
class BuildContext:
    """The resolved build a plan was made from, for the handlers that read it."""

    resolved: ResolvedBuild

    @property
    def recipe(self) -> Recipe:
        return self.resolved.recipe

    @property
    def paths(self) -> Paths:
        return self.resolved.paths
