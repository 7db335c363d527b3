"""Rendering a plan: text for people, JSON for tools, and a standalone bash script.

The shell script runs the same commands, in the same directories, with the same environment as
the executor; srcbuild's own checks become their shell equivalents where one exists and comments
where none does (preflight rules, caching).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from srcbuild.command import Command
from srcbuild.console import DEFAULT_WIDTH, Table, as_text, table, wrap_text
from srcbuild.envmods import EnvChanges
from srcbuild.findings import Severity
from srcbuild.plan.compiler import shell_restore_lines
from srcbuild.plan.model import Plan, Setting
from srcbuild.resolve.variables import NOT_INHERITED

FORMATS = ("text", "json", "shell")


def render_settings(settings: Sequence[Setting]) -> list[str]:
    """The settings as aligned lines, for the comments of the shell script."""
    width = max((len(s.name) for s in settings), default=0)
    vwidth = min(max((len(s.value) for s in settings), default=0), 48)
    lines = []
    for s in settings:
        why = f" — {s.why}" if s.why else ""
        lines.append(f"  {s.name:<{width}}  {s.value:<{vwidth}}  [{s.source}]{why}")
    return lines


def settings_table(settings: Sequence[Setting]) -> Table:
    """The resolved settings, each with where its value came from (and why, when it was chosen)."""
    rows = ((s.name, s.value, f"{s.source}" + (f" — {s.why}" if s.why else "")) for s in settings)
    return table(None, ("setting", "value", "from"), rows)


def render_env(env: EnvChanges, indent: str = "  ") -> list[str]:
    lines = []
    for c in env:
        if c.op == "set":
            text = f"{c.name}={c.value}"
        elif c.op == "prepend":
            text = f"{c.name}={c.value}:${c.name}"
        else:
            text = f"unset {c.name}"
        lines.append(f"{indent}{text}" + (f"    # {c.origin}" if c.origin else ""))
    return lines


def render_text(plan: Plan, width: int = DEFAULT_WIDTH) -> str:
    """The plan for reading, ``width`` columns wide: a long line continues on the next, indented
    (``--format shell`` prints the commands as a script to run)."""
    head = f"Plan: {plan.package} {plan.version} for recipe {plan.recipe}\n\nSettings:\n"
    out = ["", "Build variables:"]
    out += render_env(plan.env)
    out += ["", "Steps:"]
    for n, step in enumerate(plan.steps, 1):
        out.append(f"{n:2d}. [{step.id}] {step.title}")
        out.append(f"    why: {step.why}")
        if step.skip_if is not None:
            out.append(f"    skipped when: {step.skip_if.name}")
        if step.action is not None:
            out.append(f"    srcbuild: {step.action.describe()}")
        for cmd in step.commands:
            out.extend(_text_command(cmd, plan.env))
        for cmd in step.on_failure:
            out.append("    on failure (unless --keep-build):")
            out.extend(_text_command(cmd, plan.env, indent="      "))
    return (
        wrap_text(head, width) + as_text(settings_table(plan.settings), width) + wrap_text("\n".join(out) + "\n", width)
    )


def _text_command(cmd: Command, build_env: EnvChanges, indent: str = "    ") -> list[str]:
    lines = [f"{indent}$ {cmd.shell()}"]
    if cmd.cwd is not None:
        lines.append(f"{indent}  in: {cmd.cwd}")
    if len(cmd.env):
        if cmd.env == build_env:
            lines.append(f"{indent}  env: the build variables above")
        else:
            lines.append(f"{indent}  env:")
            lines += render_env(cmd.env, indent + "    ")
    lines.append(f"{indent}  why: {cmd.why}")
    return lines


def render_json(plan: Plan) -> str:
    return json.dumps(plan.to_json(), indent=2) + "\n"


def one_line(text: str) -> str:
    """``text`` with every character that is not printable (newline, NUL, ...) written as an escape:
    a comment line of the shell script can never end early and start a command."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def render_shell(plan: Plan) -> str:
    """The plan as a bash script. Every value from outside (recipe, options, environment, paths) is
    either a ``shlex.quote``d word or inside a comment made one line by ``one_line``."""
    recipe = shlex.quote(plan.recipe)
    out = [
        "#!/usr/bin/env bash",
        one_line(f"# srcbuild plan: {plan.package} {plan.version} for recipe {plan.recipe}."),
        one_line(f"# The same commands `srcbuild {plan.package} --recipe {recipe}` runs, for running by hand."),
        "set -euo pipefail",
    ]
    shown = [f for f in plan.findings if f.severity is not Severity.INFO]
    if shown:
        out += ["", "# Findings of the compatibility rules and the host checks:"]
        out += [one_line(f"# {line}") for f in shown for line in f.render().splitlines()]
    out += ["", "# What the build never inherits from the caller's environment:", f"unset {' '.join(NOT_INHERITED)}"]
    out += ["", "# Settings:"]
    out += [one_line("#" + line[1:]) for line in render_settings(plan.settings)]
    if plan.system_alternatives and plan.compiler_tree is not None:
        out += ["", "# Restore the system's gcc selection when this script ends."]
        out += list(shell_restore_lines(plan.compiler_tree))
    for n, step in enumerate(plan.steps, 1):
        out += ["", one_line(f"# --- {n}. [{step.id}] {step.title}")]
        out += [one_line(f"# {line}") for line in _wrap(step.why)]
        if step.action is not None and not step.action.runs_commands:
            if step.action.shell():
                out += list(step.action.shell())
            else:
                out.append(one_line(f"# srcbuild does this itself: {step.action.describe()}"))
        for cmd in step.commands:
            body = _shell_command(cmd)
            if step.on_failure:
                cleanup = " ; ".join(_shell_command(c) for c in step.on_failure)
                out.append(f"if ! {body}; then")
                failed = shlex.quote(f"step {step.id} failed; cleaning up")
                out.append(f"  echo {failed} >&2; {cleanup} || true")
                out.append("  exit 1")
                out.append("fi")
            else:
                out.append(body)
    out.append("")
    return "\n".join(out)


def _shell_command(cmd: Command) -> str:
    if cmd.cwd is None and not len(cmd.env):
        return cmd.shell()
    parts = []
    if cmd.cwd is not None:
        parts.append(f"cd {shlex.quote(str(cmd.cwd))}")
    parts += cmd.env.shell_lines()
    parts.append(cmd.shell())
    inner = "\n  ".join(parts)
    return f"(\n  {inner}\n)"


def _wrap(text: str, width: int = 96) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(line)
    return lines


def render(plan: Plan, fmt: str, width: int = DEFAULT_WIDTH) -> str:
    if fmt == "json":
        return render_json(plan)
    if fmt == "shell":
        return render_shell(plan)
    return render_text(plan, width)
