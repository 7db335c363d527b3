"""The top-level command table and ``srcbuild --help``, without importing click.

``srcbuild.cli`` builds its command group from this table (each command's module is imported only
when that command runs) and declares the group's help and options with these texts. Importing
click is most of what ``srcbuild --help`` costs (about 130 of 230 million instructions), so the
console script (``srcbuild.__main__``) prints the same text from here when ``--help`` or ``-h``
is the only argument: click's layout (``click.formatting.HelpFormatter``: the usage line, the help
text's paragraphs indented by two, the options and commands as definition lists) at click's width
(the terminal's columns, ``COLUMNS`` first, at most ``MAX_WIDTH``, less 2, at least 50).

The wrapping here breaks lines at single spaces only, as ``textwrap`` (click's wrapper) does for
such text; a text it would wrap differently (a hyphenated word, which ``textwrap`` may break
after the hyphen, a word longer than its column, runs of spaces, tabs, click's ``\\b`` blocks)
makes ``help_text`` return None and click prints the help instead.
``tests/unit/cli/test_fast_help.py`` compares the two at every width.
"""

from __future__ import annotations

from collections.abc import Mapping

# name -> ("module:object", the first sentence of its help): `srcbuild --help` lists the commands
# from these summaries without importing any of them (tests/unit/cli/test_lazy_commands.py checks
# each against its command).
COMMANDS: dict[str, tuple[str, str]] = {
    "recipes": ("srcbuild.cli.recipes:recipes_group", "List, show and check recipes."),
    "compat": (
        "srcbuild.cli.compat:compat_command",
        "What works for one GPU: CUDA range, gcc per CUDA, newest torch/torchvision, cuDNN, last driver, "
        "and which catalog recipes fit.",
    ),
    "doctor": (
        "srcbuild.cli.doctor:doctor_command",
        "What this machine has for building PyTorch, and which catalog recipes can build here.",
    ),
    "recommend": (
        "srcbuild.cli.doctor:recommend_command",
        "Which catalog recipe to build for a GPU (this machine's, or one described by the options).",
    ),
    "plan": (
        "srcbuild.cli.plan:plan_command",
        "Print every step, command, directory and variable a build would run, without running it.",
    ),
    "ext": (
        "srcbuild.cli.ext:ext_command",
        "Build a PyTorch extension (torch-scatter, mmcv, ...) for a recipe's GPUs against one torch.",
    ),
    "verify": (
        "srcbuild.cli.verify:verify_command",
        "Check WHEEL without a GPU: CUDA kernels per compute capability, MPI, tags, CUDA runtime, version.",
    ),
    "smoke": (
        "srcbuild.cli.verify:smoke_command",
        "Install the wheel in a venv and run it: GPU checks when there is a GPU, CPU and MPI parts always.",
    ),
    "cache": ("srcbuild.cli.cache:cache_group", "The wheel cache: list, inspect, verify, clean, share."),
    "install": (
        "srcbuild.cli.install:install_cmd",
        "Install PACKAGE built with a recipe from the cache or a remote, after checking it fits this machine.",
    ),
    "env": (
        "srcbuild.cli.env:env_group",
        "Show, create and remove a recipe's build environment; make a Python to run wheels.",
    ),
    "lock": (
        "srcbuild.cli.env:lock_env",
        "Solve recipe R's environment for linux-64 and write recipes/R.conda-lock.yml (conda-lock v1).",
    ),
    "work": (
        "srcbuild.cli.work:work_group",
        "The work directory: sources, build trees, environments, toolchains and logs.",
    ),
    "toolchain": (
        "srcbuild.cli.toolchain:toolchain_group",
        "CUDA toolkits, cuDNN, gcc, MPI and NCCL that srcbuild provisions into private prefixes.",
    ),
    "container": ("srcbuild.cli.container:container_group", "Build wheels in containers (docker or podman)."),
    "knowledge": (
        "srcbuild.cli.knowledge:knowledge_group",
        "The compatibility knowledge: facts read from upstream's wheels, checked against the tables.",
    ),
    "mirror": (
        "srcbuild.cli.mirror:mirror_group",
        "Gather what recipes need into a directory for machines without a network, and check it.",
    ),
    "config": (
        "srcbuild.cli.settings:config_group",
        "The settings: SRCBUILD_* variables and srcbuild.toml keys, with their values and origins.",
    ),
}

# the build command of each package in srcbuild.packages.PACKAGES: its summary (the registry entry's
# ``summary``, read from here, so that --help does not import the registry and its records)
PACKAGE_SUMMARIES: dict[str, str] = {
    "torch": "Build a torch wheel for a recipe (or take it from the cache).",
    "torchvision": "Build a torchvision wheel against the recipe's torch wheel (built first when missing).",
    "torchaudio": "Build a torchaudio wheel against the recipe's torch wheel (built first when missing).",
}

USAGE = "[OPTIONS] COMMAND [ARGS]..."
GROUP_HELP = (
    "Build PyTorch, torchvision and torchaudio wheels from source for legacy NVIDIA GPUs.\n\n"
    "Settings come from the command line, then SRCBUILD_* variables, then the config file."
)
# the group's options as --help lists them, in order (the first and last are click's own)
OPTIONS: tuple[tuple[str, str], ...] = (
    ("--version", "Show the version and exit."),
    ("--debug", "Show tracebacks for errors."),
    ("-q, --quiet", "Print only results and errors."),
    ("-v, --verbose", "Show every raw command a build runs."),
    ("--no-color", "No colors (also when NO_COLOR is set or output is not a terminal)."),
    (
        "--config FILE",
        "A settings file [env SRCBUILD_CONFIG; default: srcbuild.toml in the user config directory].",
    ),
    ("-h, --help", "Show this message and exit."),
)
OPTION_HELP = dict(OPTIONS)
MAX_WIDTH = 100  # the group's max_content_width


def commands(packages: Mapping[str, str] = PACKAGE_SUMMARIES) -> dict[str, tuple[str, str]]:
    """``COMMANDS`` and a build command for each package (name -> summary; ``srcbuild torch``,
    ``srcbuild torchvision``, ...: ``srcbuild.cli.build.package_command`` makes each)."""
    built = {name: (f"srcbuild.cli.build:{name}", summary) for name, summary in packages.items()}
    return {**COMMANDS, **built}


def shortened(summary: str, limit: int) -> str:
    """``summary`` cut after a whole word to fit ``limit`` columns, as click shortens a command's help."""
    if len(summary) <= limit:
        return summary
    return summary[: limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."


def help_width(environ: Mapping[str, str], terminal_columns: int | None) -> int:
    """The width click lays ``--help`` out in: ``shutil.get_terminal_size``'s columns (``COLUMNS``,
    else the terminal's, else 80) at most ``MAX_WIDTH``, less 2, and at least 50."""
    try:
        columns = int(environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        columns = terminal_columns or 80
    return max(min(columns, MAX_WIDTH) - 2, 50)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str] | None:
    """``text``'s words in lines of at most ``width`` columns, the first line starting with
    ``first`` and the others with ``rest``; None for a text ``textwrap`` might wrap otherwise (one
    with a hyphen that takes more than a line)."""
    words = text.split(" ")
    if "" in words or any(c in text for c in "\t\b\n\r\x0b\x0c"):
        return None
    lines: list[str] = []
    line = first
    empty = True
    for word in words:
        if empty:
            candidate = line + word
        else:
            candidate = f"{line} {word}"
        if len(candidate) <= width:
            line, empty = candidate, False
            continue
        if empty:  # a word longer than its column: textwrap breaks it
            return None
        lines.append(line)
        line, empty = rest + word, False
        if len(line) > width:
            return None
    lines.append(line)
    return lines if len(lines) == 1 or "-" not in text else None


def _definitions(rows: list[tuple[str, str]], width: int) -> list[str] | None:
    """click's ``write_dl`` at indent 2: the terms in a column (at most 30 wide) and each text
    wrapped beside it."""
    first_col = min(max(len(term) for term, _ in rows), 30) + 2
    lines = []
    for term, text in rows:
        if len(term) > first_col - 2:
            return None
        wrapped = _wrap(text, max(width - first_col - 2, 10), "", "")
        if wrapped is None:
            return None
        lines.append(f"  {term}{' ' * (first_col - len(term))}{wrapped[0]}")
        lines += [" " * (first_col + 2) + line for line in wrapped[1:]]
    return lines


def help_text(width: int) -> str | None:
    """What ``srcbuild --help`` prints (without its final newline) at ``width``, or None where
    click must lay it out (module docstring)."""
    usage = _wrap(USAGE, width, "Usage: srcbuild ", " " * len("Usage: srcbuild "))
    paragraphs = [_wrap(p, width, "  ", "  ") for p in GROUP_HELP.split("\n\n")]
    options = _definitions(list(OPTIONS), width)
    names = sorted(commands())
    limit = width - 6 - max(len(n) for n in names)
    listed = _definitions([(name, shortened(commands()[name][1], limit)) for name in names], width)
    if usage is None or options is None or listed is None or any(p is None for p in paragraphs):
        return None
    lines = [*usage]
    for paragraph in paragraphs:
        assert paragraph is not None
        lines += ["", *paragraph]
    lines += ["", "Options:", *options, "", "Commands:", *listed]
    return "\n".join(lines)
