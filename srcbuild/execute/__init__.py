"""Running a plan: the executor, compiler selection, build variables, progress, diagnosis, state."""

from __future__ import annotations
