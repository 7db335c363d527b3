"""``srcbuild config show``: every setting (``srcbuild.settings``) with its value and where that
value came from (default, the config file, the environment)."""

from __future__ import annotations

from collections.abc import Mapping

import click

from srcbuild.cli.common import command_environ, json_option, print_json
from srcbuild.console import print_table


@click.group("config")
def config_group() -> None:
    """The settings: SRCBUILD_* variables and srcbuild.toml keys, with their values and origins."""


def _defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """The defaults that are directories of this machine, as paths rather than words."""
    from srcbuild.config import default_config_path
    from srcbuild.paths import Paths, default_config_dir

    paths = Paths.resolve(environ=environ)
    return {
        "SRCBUILD_WORK_DIR": str(paths.work_dir),
        "SRCBUILD_CACHE_DIR": str(paths.cache_dir),
        "SRCBUILD_TOOLCHAIN_DIR": str(paths.toolchain_dir),
        "SRCBUILD_CONFIG": str(default_config_path()),
        "SRCBUILD_CONFIG_DIR": str(default_config_dir({})),
    }


@config_group.command("show")
@json_option
def show_cmd(as_json: bool) -> int:
    """Every setting, its value and where it came from (default, config file, environment)."""
    from srcbuild.precedence import shown

    environ = command_environ()
    rows = shown(environ)
    defaults = _defaults(environ)
    if as_json:
        settings = [
            {
                "variable": r.setting.var,
                "key": r.setting.key,
                "value": r.value,
                "default": defaults.get(r.setting.var, r.setting.default),
                "origin": r.origin,
                "about": r.setting.about,
            }
            for r in rows
        ]
        print_json({"settings": settings})
        return 0
    table = [
        (r.setting.var, r.value if r.value is not None else defaults.get(r.setting.var, r.setting.default), r.origin)
        for r in rows
    ]
    print_table("srcbuild settings (config show --json adds what each does)", ("variable", "value", "origin"), table)
    return 0
