"""`python -m srcbuild` and the `srcbuild` console script.

``srcbuild --help`` (or ``-h``) alone is printed from ``srcbuild.usage`` without importing click,
the same text click prints (``tests/unit/cli/test_fast_help.py``); everything else runs through
``srcbuild.cli``.
"""

import os
import sys


def entrypoint() -> None:
    """Run srcbuild with this process's arguments and exit with its exit code."""
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
    from srcbuild.cli import entrypoint as run

    run()


if __name__ == "__main__":
    entrypoint()
