"""A recipe's patches: all checked before any is applied, each applied once.

``check_commands()`` runs ``git apply --check`` on the series cumulatively: patch 1, then patches
1 and 2 concatenated, and so on (``git apply --check a b`` would check each file against the
unpatched tree, so the series is piped in as one stream). A patch that builds on an earlier one
checks correctly and the first failing command names the patch that does not apply. Nothing is
applied until every check passed. ``apply_commands()`` applies each patch and records it right
after in ``<checkout>/.git/srcbuild-patches`` (a git-config file: ``patch.<label>.sha256``), so an
interrupted or resumed build applies only what is not recorded (``pending()``) and never twice.
A recorded patch whose content changed, or one no longer in the recipe, means the checkout holds
changes the recipe no longer asks for: ``pending()`` refuses and says to re-sync the checkout.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import StepFailed

MARKER = "srcbuild-patches"
CHECK_SERIES = 'cat -- "$@" | git apply --check'  # the series as one stream: later patches see earlier ones
_ENV = EnvChanges()


def sha256_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise StepFailed(f"patch {path}: cannot read it: {exc.strerror}", "check the recipe's build.patches") from None


@dataclass(frozen=True, init=False)
class PatchSet:
    """The patches of one checkout, in order; ``labels`` name them (the recipe's build.patches entries)."""

    checkout: Path
    patch_files: tuple[Path, ...]
    labels: tuple[str, ...]

    def __init__(self, checkout: Path, patch_files: Sequence[Path], labels: Sequence[str] | None = None) -> None:
        files = tuple(Path(p) for p in patch_files)
        names = tuple(labels) if labels is not None else tuple(p.name for p in files)
        if len(names) != len(files):
            raise ValueError("one label per patch file")
        object.__setattr__(self, "checkout", Path(checkout))
        object.__setattr__(self, "patch_files", files)
        object.__setattr__(self, "labels", names)

    def __bool__(self) -> bool:
        return bool(self.patch_files)

    @property
    def marker(self) -> Path:
        return self.checkout / ".git" / MARKER

    def check_commands(self) -> list[Command]:
        """``git apply --check`` of patch 1, 1+2, ... 1..n: everything is checked before anything is applied."""
        out: list[Command] = []
        for i, label in enumerate(self.labels):
            files = tuple(str(p) for p in self.patch_files[: i + 1])
            if i == 0:
                argv: tuple[str, ...] = ("git", "apply", "--check", *files)
            else:
                argv = ("sh", "-c", CHECK_SERIES, "check-series", *files)
            why = f"check that patch {label} applies" + (" after the ones before it" if i else "")
            out.append(Command(argv, why, cwd=self.checkout, env=_ENV))
        return out

    def apply_commands(self) -> list[Command]:
        """Apply each patch, then record it (label and sha256) in the checkout's marker file."""
        out: list[Command] = []
        for path, label in zip(self.patch_files, self.labels):
            out.append(
                Command(("git", "apply", "--whitespace=nowarn", str(path)), f"apply patch {label}", self.checkout, _ENV)
            )
            out.append(
                Command(
                    ("git", "config", "--file", str(self.marker), f"patch.{label}.sha256", sha256_file(path)),
                    f"record that {label} is applied (a resumed build does not apply it again)",
                    self.checkout,
                    _ENV,
                )
            )
        return out

    def recorded(self) -> dict[str, str]:
        """Label -> sha256 of the patches recorded as applied in the checkout."""
        if not self.marker.is_file():
            return {}
        out = proc.probe(["git", "config", "--file", str(self.marker), "--null", "--list"], env=dict(os.environ))
        recorded: dict[str, str] = {}
        for item in (out or "").split("\0"):
            key, _, value = item.partition("\n")
            match = re.fullmatch(r"patch\.(.+)\.sha256", key)
            if match:
                recorded[match.group(1)] = value
        return recorded

    def pending(self) -> PatchSet:
        """The patches not applied yet; raises StepFailed when the checkout holds other changes."""
        recorded = self.recorded()
        wanted = dict(zip(self.labels, self.patch_files))
        stale = [label for label in recorded if label not in wanted]
        changed = [x for x, path in wanted.items() if x in recorded and recorded[x] != sha256_file(path)]
        if stale or changed:
            reasons = [f"{x} (changed since)" for x in changed] + [f"{x} (no longer in the recipe)" for x in stale]
            what = ", ".join(reasons)
            raise StepFailed(
                f"patches: {self.checkout} has patches applied that the recipe no longer asks for: {what}",
                f"remove {self.checkout} so the sources step checks it out again",
            )
        keep = [(p, label) for label, p in wanted.items() if label not in recorded]
        return PatchSet(self.checkout, [p for p, _ in keep], [label for _, label in keep])

    def applied(self) -> bool:
        """True when every patch is recorded as applied with its current content."""
        recorded = self.recorded()
        return all(recorded.get(label) == sha256_file(path) for path, label in zip(self.patch_files, self.labels))

    def run(self, log_path: Path | None = None, echo: IO[str] | None = None) -> None:
        """Check and apply what is pending (a small executor for this step)."""
        todo = self.pending()
        for command in todo.check_commands() + todo.apply_commands():
            result = proc.run(command.argv, cwd=command.cwd, env=dict(os.environ), log_path=log_path, echo=echo)
            if not result.ok:
                raise explain_patch_failure(command, result.tail, log_path)


def explain_patch_failure(command: Command, tail: Sequence[str], log_path: Path | None = None) -> StepFailed:
    """Name the patch a failed ``git apply`` was about (the last file on its command line) and git's words."""
    patch = command.argv[-1]
    errors = [line.strip() for line in tail if line.strip().startswith(("error:", "fatal:"))]
    said = "; ".join(errors[:3]) if errors else (tail[-1].strip() if tail else "no output")
    log = f"; full output in {log_path}" if log_path else ""
    if "--check" in command.argv or CHECK_SERIES in command.argv:
        return StepFailed(
            f"patch {patch} does not apply to {command.cwd}: {said}",
            f"no patch was applied; update the patch for this tag or drop it from build.patches{log}",
        )
    return StepFailed(f"patch {patch} failed to apply: {said}", f"see the full output{log}")
