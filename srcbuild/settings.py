"""Every user-facing setting, one line each: its environment variable, what it does, its key in the
configuration file (``srcbuild.toml``) if it has one, and its default in words.

A leaf (it imports only ``records``). Registering a setting is one ``Setting(...)`` line in
``SETTINGS``; reading one goes through ``srcbuild.precedence`` (``from_env``, ``env_value``,
``chosen``), which refuses a variable that is not registered here, so ``srcbuild config show``
lists every setting a command can read, with its value and where that value came from.
``tests/unit/test_settings.py`` fails on any ``SRCBUILD_*`` name in the code that is neither a
setting here nor in ``NOT_SETTINGS``, and on any read of one that does not go through precedence.

``kind`` says how the value is written: "path", "paths" (joined with the path separator), "list"
(joined with ","), "str", "bool" (1/0, yes/no, true/false, on/off), "int" or "number" (> 0).
"""

from __future__ import annotations

from srcbuild.records import record


@record
class Setting:
    """One setting (see the module docstring)."""

    var: str
    about: str
    key: str | None = None
    kind: str = "str"
    default: str = "none"
    fallback: str | None = None  # a variable of another tool read when ``var`` is unset
    secret: bool = False  # its value is never printed


SETTINGS: tuple[Setting, ...] = (
    # where things go
    Setting(
        "SRCBUILD_WORK_DIR", "sources, build trees, environments and logs", "work_dir", "path", "user cache dir/work"
    ),
    Setting(
        "SRCBUILD_CACHE_DIR", "the local wheel cache", "cache_dir", "path", "cache/ of a checkout, else user cache dir"
    ),
    Setting(
        "SRCBUILD_TOOLCHAIN_DIR",
        "provisioned toolchains (CUDA, gcc)",
        "toolchain_dir",
        "path",
        "WORK_DIR/toolchains",
    ),
    Setting("SRCBUILD_CONFIG", "the configuration file (--config)", None, "path", "user config dir/srcbuild.toml"),
    Setting("SRCBUILD_CONFIG_DIR", "trusted signers and the signing key", None, "path", "user config dir"),
    Setting(
        "SRCBUILD_RECIPES_PATH", "more recipe directories, searched first", "recipes_path", "paths", "the catalog only"
    ),
    Setting("SRCBUILD_PATCHES_PATH", "more patch directories", "patches_path", "paths", "the built-in patches only"),
    # where downloads come from
    Setting("SRCBUILD_MIRROR", "git mirror rules (name or PREFIX=URL ...)", "mirrors", "list", "upstream URLs"),
    Setting("SRCBUILD_MIRROR_DIR", "a mirror directory or URL every download comes from", "mirror_dir", "str"),
    Setting("SRCBUILD_NVIDIA_MIRROR", "a mirror of NVIDIA's download site", "nvidia_mirror", "str", "NVIDIA's site"),
    Setting("SRCBUILD_CHANNEL_ALIAS", "base URL of conda channel names", "channel_alias", default="conda's"),
    Setting("SRCBUILD_CHANNEL_MIRRORS", "conda channel mirrors (name=url ...)", "channel_mirrors", "list"),
    Setting(
        "SRCBUILD_DEBIAN_MIRROR", "the Debian archive the debian provider reads", None, "str", "the host's apt sources"
    ),
    Setting(
        "SRCBUILD_TOOLCHAIN_PROVIDERS",
        "toolchain providers to try first (debian,redist)",
        "toolchain_providers",
        "list",
        "each provider's own order",
    ),
    Setting(
        "SRCBUILD_TOOLCHAIN_DATA",
        "a directory of toolchain data files replacing the built-in ones",
        None,
        "path",
        "toolchain/data",
    ),
    # how builds run
    Setting(
        "SRCBUILD_ENV_BACKEND",
        "how build environments are made (venv, conda, rattler, ...)",
        "env_backend",
        "str",
        "from the recipe",
    ),
    Setting("SRCBUILD_PORTABLE", "build manylinux wheels in the build image", "portable", "bool", "no"),
    Setting("SRCBUILD_KEEP_BUILD", "keep the build tree after a successful build", "keep_build", "bool", "no"),
    Setting("SRCBUILD_CUDA_HOME", "the CUDA toolkit to use (--cuda-home)", None, "path", "probed"),
    Setting("SRCBUILD_CUDA_CONTRACT", "an incomplete CUDA home: error or warn", None, "str", "error"),
    Setting(
        "SRCBUILD_BUILD_IMAGE", "the container image a portable build runs in", None, "str", "built from the Dockerfile"
    ),
    Setting("SRCBUILD_COMPILER_CACHE", "compiler cache: ccache, sccache or none", "compiler_cache", "str", "auto"),
    Setting("SRCBUILD_CCACHE", "0 turns the compiler cache off", None, "bool", "on when one is installed"),
    Setting(
        "SRCBUILD_COMPILER_CACHE_URL", "a shared compiler cache (redis://, s3://, ...)", "compiler_cache_url", "str"
    ),
    Setting("SRCBUILD_DIST_SCHEDULER", "an sccache-dist scheduler URL", "dist_scheduler", "str"),
    Setting("SRCBUILD_DIST_TOKEN", "the sccache-dist client token", None, "str", secret=True),
    # the wheel cache and its remotes
    Setting("SRCBUILD_INSTALLER", "what installs a cached wheel: auto, uv or pip", "installer", "str", "auto"),
    Setting("SRCBUILD_REMOTES", "cache remotes (dir, s3://, http(s)://), comma-separated", "remotes", "list"),
    Setting(
        "SRCBUILD_S3_ENDPOINT_URL", "the endpoint of s3:// remotes", "s3_endpoint_url", default="AWS's",
        fallback="AWS_ENDPOINT_URL",
    ),
    Setting("SRCBUILD_NET_TIMEOUT", "seconds one read from a remote may wait", None, "number", "30"),
    Setting("SRCBUILD_NET_DEADLINE", "seconds one request to a remote may take", None, "number", "120"),
    Setting("SRCBUILD_NET_MAX_REQUESTS", "requests one command may send a remote", None, "int", "10000"),
    Setting("SRCBUILD_NET_MAX_BYTES", "bytes one command may read from a remote", None, "int", "256 GiB"),
    Setting("SRCBUILD_SIGNING_KEY", "the key cache push signs with", None, "path", "config dir/signing-key.pem"),
    Setting("SRCBUILD_TRUSTED_SIGNERS", "the trusted signers file", None, "path", "config dir/trusted-signers"),
    Setting(
        "SRCBUILD_MACHINE_FILE", "describe another machine for install/cache pull (JSON)", None, "path", "this machine"
    ),
    Setting("SRCBUILD_SERVE_LOG", "cache serve prints a line per request", None, "bool", "no"),
    # the command line itself
    Setting("SRCBUILD_DEBUG", "show tracebacks (--debug)", None, "bool", "no"),
)

# Names in the code that look like settings and are not: with why.
NOT_SETTINGS: dict[str, str] = {
    "SRCBUILD_CONFIG_SOURCES": "bookkeeping: which variables this run took from the config file",
    "SRCBUILD_GIT_CACHE": "set by srcbuild for the git commands it runs, never read from the user",
    "SRCBUILD_EXT_SOURCE_EDIT": "set by srcbuild in an extension build's variables: the edit made to its sdist",
    "SRCBUILD_PREV_GCC": "a variable of the shell script that switches the host compiler",
    "SRCBUILD_PREV_STATUS": "a variable of the shell script that switches the host compiler",
    "SRCBUILD_VENV": "where the build image installs srcbuild (a path in the Dockerfile)",
}

BY_VAR: dict[str, Setting] = {s.var: s for s in SETTINGS}
