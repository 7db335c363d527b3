"""`python -m srcbuild` and the `srcbuild` console script.

``srcbuild --help`` (or ``-h``) alone is printed from ``srcbuild.usage`` without importing click,
the same text click prints (``tests/unit/cli/test_fast_help.py``). ``srcbuild install ...`` first
asks ``srcbuild.quick_hit`` whether a record of the same hit still holds (then uv installs the wheel
and nothing else is imported); otherwise it runs, as everything else does, through ``srcbuild.cli``,
with what it reads traced (``srcbuild.read_trace``) so that a hit it installs can be recorded.
"""

import gc
import os
import sys

# A command starts by importing a few hundred modules and reading its tables: tens of thousands of
# objects that live until it exits, none of them garbage, which the collector walked again and again
# (a young collection each 700 allocations by default, an older one each ten of those): 3 to 4% of
# doctor's and plan's instructions. Collections still run, each 50,000 allocations.
YOUNG_GENERATION = 50_000


def entrypoint() -> None:
    """Run srcbuild with this process's arguments and exit with its exit code."""
    gc.set_threshold(YOUNG_GENERATION, *gc.get_threshold()[1:])
    if sys.argv[1:] in (["--help"], ["-h"]):
        from srcbuild.usage import help_text, help_width

        try:
            columns: int | None = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = None
        text = help_text(help_width(os.environ, columns))
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            sys.exit(0)
    if sys.argv[1:2] != ["install"]:
        _run()
        return
    from srcbuild.quick_hit import install_again, watching_stderr

    try:
        code = install_again(sys.argv[1:], os.environ)
    except KeyboardInterrupt:
        from srcbuild.cli import interrupted

        sys.exit(interrupted(sys.argv[1:]))
    if code is not None:
        sys.exit(code)
    from srcbuild.read_trace import tracing

    watching_stderr()
    with tracing():
        _run()


def _run() -> None:
    from srcbuild.cli import entrypoint as run

    run()


if __name__ == "__main__":
    entrypoint()
