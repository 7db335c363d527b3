"""The toolchain part of ``srcbuild doctor``: provisioned prefixes, and per recipe what srcbuild
will fetch for it instead of a page of manual steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srcbuild.files import human_size
from srcbuild.host.facts import HostFacts
from srcbuild.recipe.model import Recipe
from srcbuild.records import record
from srcbuild.toolchain.needs import Need, fetch_line, needs_for
from srcbuild.toolchain.session import Session
from srcbuild.toolchain.store import Toolchain


@record
class ToolchainReport:
    root: str
    provisioned: tuple[Toolchain, ...]
    per_recipe: tuple[tuple[str, tuple[Need, ...]], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "toolchain_dir": self.root,
            "provisioned": [t.to_json() for t in self.provisioned],
            "recipes": {name: [n.to_json() for n in needs] for name, needs in self.per_recipe},
        }

    def render(self) -> str:
        """The report as text; the caller wraps it to the output's width (``console.echo_text``)."""
        out = [f"Provisioned toolchains ({self.root}):"]
        out.extend(
            f"  {t.name} {t.version} ({t.provider}, {human_size(t.size)}) in {t.prefix.name}" for t in self.provisioned
        )
        if not self.provisioned:
            out.append("  none")
        lines = [(name, fetch_line(list(needs))) for name, needs in self.per_recipe]
        wanted = [(name, line) for name, line in lines if line]
        if wanted:
            out.append("What `srcbuild toolchain install --recipe R` fetches:")
            for name, line in wanted:
                out.append(f"  {name}: {line}")
        return "\n".join(out) + "\n"


def toolchain_report(
    session: Session,
    host: HostFacts,
    recipes: Sequence[Recipe],
    sysroot_of: Callable[[Recipe], str | None] = lambda recipe: None,
) -> ToolchainReport:
    """What is provisioned, and per recipe what a build of it would fetch; ``sysroot_of`` gives a
    portable recipe's sysroot glibc (its compiler is then the conda gcc with that sysroot)."""
    per_recipe = tuple(
        (r.name, tuple(needs_for(r, host, session.store, session.facts, session.prefer, sysroot_of(r), session.reach)))
        for r in sorted(recipes, key=lambda r: r.name)
    )
    return ToolchainReport(str(session.store.root), tuple(session.store.entries()), per_recipe)
