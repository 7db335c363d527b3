"""Making a source checkout: a tag of one repository with all its submodules, through a shared object cache.

Layout of the shared git object cache (``Paths.git_cache_dir``), one entry per top-level URL::

    <git_cache>/<name>-<sha1(url)[:12]>.git            bare repository: the tags fetched so far
    <git_cache>/<name>-<hash>.git/modules/<name>/      bare repository per submodule name, nested
                                                       ones under .../modules/<name>/modules/<name>/

The key is the URL a recipe names, not the mirror it is fetched from, so switching mirrors keeps
the cache. The layout is the one git computes with ``submodule.alternateLocation=superproject``
(git-config: a submodule borrows objects from ``<superproject's alternate>/modules/<name>``).

A sync (``SourceSync.commands()``, pure) runs:

1. ``git init --bare`` of the cache entry (a no-op when it exists) and ``git fetch`` of the tag into
   it: a second tag transfers only what is new.
2. ``git clone --shared --no-checkout`` from the cache into ``.<checkout>.partial`` (no object is
   copied: the clone borrows the cache's objects through ``objects/info/alternates``), point
   ``origin`` back at the real URL, check out the tag, seed ``.git/modules`` with hard links to
   every submodule git dir the cache holds (``git submodule update`` reuses a git dir it finds, so a
   known submodule needs no fetch), and rename the partial directory into place. A killed clone
   leaves only the partial directory, which the next run removes. A checkout already at the same
   commit with no patch applied (an interrupted sync) is kept instead, so running every command
   again continues where the last run stopped.
3. ``git submodule sync --recursive``, then every submodule whose commit the seeded git dir already
   holds is checked out straight from it, N at a time, at every depth (``CHECKOUT_CACHED``: one
   ``git checkout`` per submodule, no transport, the same files, ``.git`` links and config as
   ``git submodule update`` writes). Only when some submodule is left (new to the cache, or a commit
   the cache lacks) does ``git submodule update --init --recursive --jobs N`` run, with
   ``submodule.alternateLocation=superproject``: each submodule clone borrows the objects the cache
   already holds for it and fetches only the rest (``alternateErrorStrategy=info``: a submodule the
   cache has never seen is simply cloned). Both are restartable: rerunning them continues.
4. Every submodule is recorded in the cache. The first sync of a repository hard-links the whole
   ``.git/modules`` tree into the cache in one command (made bare: ``core.worktree`` dropped); later
   syncs run ``git submodule foreach --recursive``: a submodule seen for the first time is a
   ``git clone --mirror`` of the checkout's module (local, so objects are hard links, not copies),
   a new commit of a known one is a ``git fetch`` of just that commit.

Two syncs of the same repository must not run at the same time: hold ``checkout.lock(sync)`` (a file
lock next to the cache entry) while running the commands, as the executor's sources step does
(``srcbuild.execute.handlers.sync_sources``).

Every git process gets the mirror rules as ``-c url.<base>.insteadOf=<prefix>`` arguments, which git
hands down to the processes that clone submodules at every depth. Checkouts borrow objects from the
cache: delete a checkout freely, but deleting the cache breaks the checkouts made from it (remove
both, or the checkouts first).

``srcbuild.sources.checkout.is_complete()`` tells a resumed build whether the checkout can be used
as it is: the checkout is at the tag and every submodule at every depth is initialised at its
recorded commit
(``complete_commits()`` answers that and ``submodule_commits()`` with one ``git submodule status``).
"""

from __future__ import annotations

import hashlib
from dataclasses import field
from pathlib import Path

from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.recipe.model import SourcePin
from srcbuild.records import record
from srcbuild.sources.mirrors import MirrorRules

GIT_ENV = (
    EnvChanges()
    .set("GIT_TERMINAL_PROMPT", "0", "sources: fail instead of asking for credentials")
    .set("GIT_NO_REPLACE_OBJECTS", "1", "sources: the pinned commits themselves, never a local `git replace`")
)
CACHE_VAR = "SRCBUILD_GIT_CACHE"

# Run by `git submodule foreach --recursive` in each submodule ($sha1 is set by foreach): find the
# module's place in the cache from its git dir (<checkout>/.git/modules/<name>[/modules/<name>...]),
# then mirror-clone it there (first sight) or fetch the one commit the cache lacks. foreach exports
# GIT_DIR=.git, which `git -C <cache>` must not see.
RECORD = (
    "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE; "
    'g=$(git rev-parse --absolute-git-dir) && c="$SRCBUILD_GIT_CACHE/modules/${g#*/.git/modules/}" && '
    'if test -f "$c/HEAD"; then '
    'git -C "$c" cat-file -e "$sha1^{commit}" 2>/dev/null || '
    'git -C "$c" fetch --quiet --no-tags "$g" "+$sha1:refs/srcbuild/$sha1"; '
    'else mkdir -p "$(dirname "$c")" && p="$c.partial.$$" && rm -rf "$p" && '
    'git clone --quiet --mirror "$g" "$p" && git -C "$p" update-ref "refs/srcbuild/$sha1" "$sha1" && '
    '{ mv -T "$p" "$c" 2>/dev/null || rm -rf "$p"; }; fi'
)

# The recording step. The first sync of a repository hard-links the checkout's whole .git/modules
# tree into the cache in one go (packs are immutable, so links are safe) and turns the copies into
# bare repositories (no index, and no sample hooks: a third of the files every later seed links).
# Later syncs run RECORD in each submodule, unless every object file of the checkout's submodules
# is a hard link into the cache (nothing was fetched: nothing to record).
# Partial copies carry the shell's pid, and losing the final rename to a concurrent sync is fine.
RECORD_ALL = (
    'c="$SRCBUILD_GIT_CACHE"; test -d .git/modules || exit 0; '
    'if ! test -d "$c/modules"; then p="$c/modules.partial.$$" && rm -rf "$p" && cp -al .git/modules "$p" && '
    "find \"$p\" -type f \\( -name index -o -path '*/hooks/*.sample' \\) -delete && "
    "find \"$p\" -name config -type f -exec sed -i -e '/^[[:space:]]*worktree = /d' "
    "-e 's/^\\([[:space:]]*bare = \\)false/\\1true/' {} + && "
    '{ mv -T "$p" "$c/modules" 2>/dev/null || rm -rf "$p"; }; exit; fi; '
    "find .git/modules -path '*/objects/*' ! -path '*/objects/info/*' -type f -links 1 | grep -q . || exit 0; "
    'exec git -c protocol.file.allow=always submodule foreach --quiet --recursive "$1"'
)

# Seeding a new checkout (run in it before it is moved into place): hard-link every submodule git
# dir the cache holds into .git/modules, made non-bare. `git submodule update` then reuses a git dir
# it finds (as after `git submodule deinit`) and only checks out, with no transport at all, unless
# the commit is missing; git itself sets core.worktree when it connects the work tree.
SEED = (
    'c="$SRCBUILD_GIT_CACHE"; test -d "$c/modules" || exit 0; rm -rf .git/modules && '
    'cp -al "$c/modules" .git/modules && '
    "exec find .git/modules -name config -type f -exec sed -i "
    "-e 's/^\\([[:space:]]*bare = \\)true/\\1false/' {} +"
)

# Moving the partial clone ($1) into place ($2). A checkout already at the same commit, with no
# patch applied yet, is an interrupted sync of this tag: keep it (its submodules, fetched or not,
# and its build tree) and drop the partial clone. Anything else is replaced.
SWAP = (
    'h=; test -d "$2/.git" && h=$(git -C "$2" rev-parse -q --verify HEAD 2>/dev/null); '
    'if test -n "$h" && test "$h" = "$(git -C "$1" rev-parse HEAD)" && ! test -e "$2/.git/srcbuild-patches"; '
    'then exec rm -rf "$1"; fi; rm -rf "$2" && exec mv -T "$1" "$2"'
)

# Checking out the submodules the cache already holds, in parallel (run in the checkout as
# `sh -c CHECKOUT_CACHED name CHECKOUT_CACHED JOBS . .git [git submodule update ...]`; it runs
# itself again, with no update command, in each submodule that has submodules). For every gitlink
# of the work tree $3 (git dir $4, both relative to the checkout) whose git dir $4/modules/<name>
# (seeded from the cache) holds the recorded commit: connect it the way git does (a relative
# `gitdir:` file and core.worktree), then `git checkout -f --detach` the commit, up to JOBS at a
# time, while `git submodule--helper init` records the URLs (the builtin `git submodule init` runs:
# git 2.39's script around it starts about 20 helper processes, 28 ms of CPU to 2; a git without
# the helper gets the script). A gitlink it cannot take this way (not cached,
# commit missing, a path or name with blanks; all of them when $4/modules is missing, as on a
# first sync) is printed as "left <path>"; only then does the top level run the update command it
# was given, which clones and fetches just those (the rest are already at their commits). A
# checkout that fails stops the command with git's own message.
CHECKOUT_CACHED = (
    's=$1 j=$2 W=$3 G=$4; shift 4; test -f "$W/.gitmodules" || exit 0; '
    'test -d "$G/modules" || { test $# -eq 0 || exec "$@"; echo "left $W"; exit 0; }; '
    '{ git -C "$W" submodule--helper init --quiet 2>/dev/null || git -C "$W" submodule --quiet init; } >&2 & i=$!; '
    'left=$({ git -C "$W" config -f .gitmodules --get-regexp "^submodule\\..*\\.path\\$"; echo; '
    'git -C "$W" ls-files -s; } | '
    "awk 'NF == 0 {i = 1; next} "
    '!i {if (NF == 2) {n = $1; sub(/^submodule\\./, "", n); sub(/\\.path$/, "", n); name[$2] = n}; next} '
    '$1 == "160000" {if (NF == 4 && ($4 in name)) print $2, $4, name[$4]; else print "left", "-", "-"}'
    "' | xargs -r -P \"$j\" -n 3 sh -c '"
    'up() { r=; x=$1; while :; do r="../$r"; case $x in */*) x=${x#*/} ;; *) break ;; esac; done; }; '
    's=$1 j=$2 W=$3 G=$4 c=$5 p=$6 n=$7; if test "$c" = left; then echo "left a submodule of $W"; exit; fi; '
    'if test "$W" = .; then w=$p; else w=$W/$p; fi; g=$G/modules/$n; '
    'if ! test -f "$g/HEAD" || ! git --git-dir="$g" cat-file -e "$c^{commit}" 2>/dev/null; '
    'then echo "left $w"; exit; fi; '
    '{ test -d "$w" || mkdir -p "$w"; } && up "$w" && echo "gitdir: $r$g" >"$w/.git" && up "$g" && '
    'git --git-dir="$g" config core.worktree "$r$w" && '
    'git -C "$w" -c advice.detachedHead=false checkout -q -f --detach "$c" || exit; '
    'test -f "$w/.gitmodules" || exit 0; exec sh -c "$s" nested "$s" "$j" "$w" "$g"'
    '\' one "$s" "$j" "$W" "$G") || exit; '
    "wait $i || exit; "
    'test -n "$left" && test $# -gt 0 || { test -z "$left" || echo "$left"; exit 0; }; '
    'echo "$left" | sed "s/^left /not in the cache: /"; exec "$@"'
)


def cache_repo(git_cache: Path, url: str) -> Path:
    """The cache entry of a top-level repository URL."""
    name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    name = name[: -len(".git")] if name.endswith(".git") else name
    digest = hashlib.sha1(url.encode()).hexdigest()[:12]
    return git_cache / f"{name or 'repo'}-{digest}.git"


@record
class SourceSync:
    """The checkout of one pinned tag and the commands that make it (plain data: the questions asked
    of the checkout on disk are ``srcbuild.sources.checkout``'s)."""

    pin: SourcePin
    checkout: Path
    git_cache: Path
    mirrors: MirrorRules = field(default_factory=MirrorRules)
    jobs: int = 8
    label: str = "torch"  # the recipe table the pin comes from, for messages
    accept_moved: bool = False  # --accept-moved-tag: record the tag's new commit instead of refusing it

    @property
    def cache(self) -> Path:
        return cache_repo(self.git_cache, self.pin.repo)

    @property
    def partial(self) -> Path:
        return self.checkout.parent / f".{self.checkout.name}.partial"

    @property
    def _cache_env(self) -> EnvChanges:
        return GIT_ENV.set(CACHE_VAR, str(self.cache), "sources: the object cache entry")

    def _git(self, *args: str) -> tuple[str, ...]:
        return ("git", *self.mirrors.git_config_args(own_urls=(self.pin.repo,)), *args)

    def commands(self) -> list[Command]:
        """Every command of a sync from scratch, in order (see the module docstring)."""
        tag, url = self.pin.tag, self.pin.repo
        via = f" (fetched from {self.mirrors.rewrite(url)})" if self.mirrors.rewrite(url) != url else ""
        return [
            Command(
                ("git", "init", "--bare", "--quiet", str(self.cache)),
                f"shared object cache for {url} (kept between builds; a no-op when it exists)",
                env=GIT_ENV,
            ),
            Command(
                # fetch.unpackLimit=1: what arrives stays one pack (only indexed), never rewritten as loose objects
                self._git("-c", "fetch.unpackLimit=1", "fetch", "--no-tags", url, f"+refs/tags/{tag}:refs/tags/{tag}"),
                f"fetch tag {tag} into the object cache{via}; a cached earlier tag makes this incremental",
                cwd=self.cache,
                env=GIT_ENV,
            ),
            Command(("rm", "-rf", "--", str(self.partial)), "remove what an interrupted clone left", env=GIT_ENV),
            Command(
                ("git", "clone", "--quiet", "--shared", "--no-checkout", str(self.cache), str(self.partial)),
                "clone from the object cache without copying objects",
                env=GIT_ENV,
            ),
            Command(
                ("git", "remote", "set-url", "origin", url),
                "point origin at the upstream URL (submodule URLs and mirror rules refer to it)",
                cwd=self.partial,
                env=GIT_ENV,
            ),
            Command(
                ("git", "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", f"refs/tags/{tag}"),
                f"check out {tag}",
                cwd=self.partial,
                env=GIT_ENV,
            ),
            Command(
                ("sh", "-c", SEED),
                "seed the submodule git dirs from the cache (hard links): known submodules need no fetch",
                cwd=self.partial,
                env=self._cache_env,
            ),
            Command(
                ("sh", "-c", SWAP, "swap", str(self.partial), str(self.checkout)),
                "move the finished clone into place (a killed clone never looks finished); a checkout already "
                "at this commit and not yet patched is kept, so its submodule progress continues",
                env=GIT_ENV,
            ),
            *self.submodule_commands(),
        ]

    def submodule_commands(self) -> list[Command]:
        """The restartable part: run again on a checkout already at the tag, it continues."""
        update_config = (
            "-c",
            "submodule.alternateLocation=superproject",
            "-c",
            "submodule.alternateErrorStrategy=info",
        )
        jobs = str(self.jobs)
        cached = ("sh", "-c", CHECKOUT_CACHED, "checkout-cached", CHECKOUT_CACHED, jobs, ".", ".git")
        return [
            Command(
                self._git("submodule", "sync", "--quiet", "--recursive"),
                "copy the submodule URLs of this tag into .git/config (they change between tags)",
                cwd=self.checkout,
                env=GIT_ENV,
            ),
            Command(
                (*cached, *self._git(*update_config, "submodule", "update", "--init", "--recursive", "--jobs", jobs)),
                f"check out every submodule at every depth, {self.jobs} at a time: those whose commit the cache "
                "holds straight from it (no transport; also one a killed run cloned but never checked out), then, "
                "only if any is left, git submodule update fetches the rest, borrowing objects from the cache, "
                "so setup.py never fetches by itself",
                cwd=self.checkout,
                env=GIT_ENV,
            ),
            Command(
                ("sh", "-c", RECORD_ALL, "record-in-cache", RECORD),
                "record every submodule's objects in the cache (hard links on first sight, then new commits only)",
                cwd=self.checkout,
                env=self._cache_env,
            ),
        ]
