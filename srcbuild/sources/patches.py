"""A recipe's patches: all checked before any is applied, each applied once.

``check_commands()`` runs ``git apply --check`` on the series cumulatively: patch 1, then patches
1 and 2 concatenated, and so on (``git apply --check a b`` would check each file against the
unpatched tree, so the series is given as one stream). A patch that builds on an earlier one
checks correctly and the first failing command names the patch that does not apply. Nothing is
applied until every check passed. ``apply_commands()`` applies each patch and records it right
after in ``<checkout>/.git/srcbuild-patches`` (a git-config file: ``patch.<label>.sha256``). Every
command skips the patches already recorded with the same content, so running the whole step again
after an interruption applies only the rest and never a patch twice (``checkout.pending_patches``
says which).
A recorded patch whose content changed, or one no longer in the recipe, means the checkout holds
changes the recipe no longer asks for: ``pending_patches`` refuses and says to re-sync the checkout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.errors import StepFailed
from srcbuild.files import sha256_file

MARKER = "srcbuild-patches"
# Both scripts take the marker file, then `label sha256 file` per patch, and skip a patch the marker
# records with the same sha256, so running the step again (a resumed build) is safe.
# CHECK_SERIES: `git apply --check` of the unrecorded patches among those given, as one stream (with
# several file arguments git apply would check each against the unpatched tree); nothing to do when
# the last one is recorded.
CHECK_SERIES = (
    "m=$1; shift; t=$(mktemp) || exit 1; trap 'rm -f \"$t\"' EXIT; last=; "
    "while [ $# -ge 3 ]; do "
    'if [ "$(git config --file "$m" --get "patch.$1.sha256")" = "$2" ]; then last=; '
    'else cat -- "$3" >> "$t" || exit 1; last=$3; fi; shift 3; done; '
    'test -n "$last" || exit 0; git apply --check "$t"'
)
# APPLY_ONCE: apply one patch unless recorded, then record it.
APPLY_ONCE = (
    'm=$1; [ "$(git config --file "$m" --get "patch.$2.sha256")" = "$3" ] && exit 0; '
    'git apply --whitespace=nowarn "$4" && exec git config --file "$m" "patch.$2.sha256" "$3"'
)
_ENV = EnvChanges()


def patch_sha256(path: Path) -> str:
    """A patch file's sha256; a step failure naming the patch when it cannot be read."""
    try:
        return sha256_file(path)
    except OSError as exc:
        raise StepFailed(f"patch {path}: cannot read it: {exc.strerror}", "check the recipe's build.patches") from None


@dataclass(frozen=True, init=False)
class PatchSet:
    """The patches of one checkout, in order; ``labels`` name them (the recipe's build.patches entries)."""

    checkout: Path
    patch_files: tuple[Path, ...]
    labels: tuple[str, ...]
    digests: tuple[str, ...] | None  # the sha256 of each file, when already known (a resolved build's)

    def __init__(
        self,
        checkout: Path,
        patch_files: Sequence[Path],
        labels: Sequence[str] | None = None,
        digests: Sequence[str] | None = None,
    ) -> None:
        files = tuple(Path(p) for p in patch_files)
        names = tuple(labels) if labels is not None else tuple(p.name for p in files)
        if len(names) != len(files) or (digests is not None and len(digests) != len(files)):
            raise ValueError("one label (and one digest) per patch file")
        object.__setattr__(self, "checkout", Path(checkout))
        object.__setattr__(self, "patch_files", files)
        object.__setattr__(self, "labels", names)
        object.__setattr__(self, "digests", tuple(digests) if digests is not None else None)

    def __bool__(self) -> bool:
        return bool(self.patch_files)

    @property
    def marker(self) -> Path:
        return self.checkout / ".git" / MARKER

    def _args(self, upto: int) -> tuple[str, ...]:
        """``label sha256 file`` for patches 1..upto, the arguments of the scripts above."""
        out: list[str] = []
        for i, (path, label) in enumerate(zip(self.patch_files[:upto], self.labels[:upto])):
            out += [label, self.digests[i] if self.digests is not None else patch_sha256(path), str(path)]
        return tuple(out)

    def check_commands(self) -> list[Command]:
        """``git apply --check`` of patches 1, 1+2, ... 1..n: everything is checked before anything is applied."""
        return [
            Command(
                ("sh", "-c", CHECK_SERIES, "check-series", str(self.marker), *self._args(i + 1)),
                f"check that patch {label} applies" + (" after the ones before it" if i else ""),
                cwd=self.checkout,
                env=_ENV,
            )
            for i, label in enumerate(self.labels)
        ]

    def apply_commands(self) -> list[Command]:
        """Apply each patch not recorded yet, then record it (label and sha256) in the marker file."""
        return [
            Command(
                ("sh", "-c", APPLY_ONCE, "apply-once", str(self.marker), *self._args(i + 1)[-3:]),
                f"apply patch {label} and record it (skipped when already recorded: never applied twice)",
                cwd=self.checkout,
                env=_ENV,
            )
            for i, label in enumerate(self.labels)
        ]


def explain_patch_failure(command: Command, tail: Sequence[str], log_path: Path | None = None) -> StepFailed:
    """Name the patch a failed ``git apply`` was about (the last file on its command line) and git's words."""
    patch = command.argv[-1]
    errors = [line.strip() for line in tail if line.strip().startswith(("error:", "fatal:"))]
    said = "; ".join(errors[:3]) if errors else (tail[-1].strip() if tail else "no output")
    log = f"; full output in {log_path}" if log_path else ""
    if CHECK_SERIES in command.argv:
        return StepFailed(
            f"patch {patch} does not apply to {command.cwd}: {said}",
            f"no patch was applied; update the patch for this tag or drop it from build.patches{log}",
        )
    return StepFailed(f"patch {patch} failed to apply: {said}", f"see the full output{log}")
