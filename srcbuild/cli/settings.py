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
    """The defaults that are files and directories of this machine, as paths rather than words: as
    the commands resolve them (``srcbuild.precedence``), from the other settings where they follow
    one (the toolchain directory in the work directory, the signing key in the config directory)."""
    from srcbuild.cache.signing import signing_key_choice, trusted_signers_path
    from srcbuild.config import default_config_path
    from srcbuild.paths import Paths, default_config_dir

    paths = Paths.resolve(environ=environ)
    key = signing_key_choice(None, {k: v for k, v in environ.items() if k != "SRCBUILD_SIGNING_KEY"}).value
    return {
        "SRCBUILD_WORK_DIR": str(paths.work_dir),
        "SRCBUILD_CACHE_DIR": str(paths.cache_dir),
        "SRCBUILD_TOOLCHAIN_DIR": str(paths.toolchain_dir),
        "SRCBUILD_CONFIG": str(default_config_path()),
        "SRCBUILD_CONFIG_DIR": str(default_config_dir({})),
        "SRCBUILD_SIGNING_KEY": f"{key}" + ("" if key.is_file() else " (none there yet)"),
        "SRCBUILD_TRUSTED_SIGNERS": str(trusted_signers_path({k: v for k, v in environ.items()
                                                              if k != "SRCBUILD_TRUSTED_SIGNERS"})),
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
