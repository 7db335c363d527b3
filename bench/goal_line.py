"""One machine-readable line per goal a benchmark checks, for ``bench/run_all.py`` to gather.

A benchmark prints its own table for people, then, for each goal, a line ``goal-json: {json}`` with
the metric, srcbuild's figure, the baseline's (run side by side), their ratio, the goal as text
and whether it was met. ``run_all.py`` runs every benchmark and prints those lines as one table.
"""

from __future__ import annotations

import json
import os

PREFIX = "goal-json: "


def goal_line(metric: str, srcbuild: str, baseline: str, ratio: str, goal: str, met: bool, note: str = "") -> None:
    """Print the line of one goal (figures as text with their units: ``0.42 s``, ``1.12x``)."""
    row = {
        "metric": metric,
        "srcbuild": srcbuild,
        "baseline": baseline,
        "ratio": ratio,
        "goal": goal,
        "met": met,
        "load": round(os.getloadavg()[0], 1),
        "note": note,
    }
    print(PREFIX + json.dumps(row), flush=True)


def parse_goal_lines(text: str) -> list[dict[str, object]]:
    """The goal lines of a benchmark's output."""
    return [json.loads(line[len(PREFIX) :]) for line in text.splitlines() if line.startswith(PREFIX)]
