"""Plans: what a build will run, as data. ``make_plan(resolved)`` is pure; ``srcbuild plan`` prints a
plan and ``srcbuild torch`` hands the very same object to the executor."""

from __future__ import annotations

from srcbuild.plan.make import make_plan
from srcbuild.plan.model import Action, Plan, Setting, Step
from srcbuild.plan.render import render

__all__ = ["Action", "Plan", "Setting", "Step", "make_plan", "render"]
