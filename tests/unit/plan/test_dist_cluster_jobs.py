"""MAX_JOBS with an sccache-dist cluster: a host-probe fact (its build servers' CPUs) that resolve
prefers to what this machine's memory allows, shown with its reason by ``srcbuild plan``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from srcbuild.paths import Paths
from srcbuild.plan.render import render_settings
from srcbuild.recipe import Recipe
from srcbuild.resolve import BuildHost, BuildOptions
from srcbuild.resolve.decide import decide
from srcbuild.resolve.inputs import DistCluster
from srcbuild.resolve.model import Origin
from srcbuild.resolve.probe import probe_dist_cluster
from tests.unit.plan.conftest import load, plan_for

SCHEDULER = "http://127.0.0.1:10600"
ASKED = "sccache --dist-status; scheduler from command line --dist-scheduler"


def _dist(host: BuildHost, options: BuildOptions, cluster: DistCluster) -> tuple[BuildHost, BuildOptions]:
    return (
        dataclasses.replace(host, sccache=Path("/usr/bin/sccache"), dist_cluster=cluster),
        dataclasses.replace(options, dist_scheduler=SCHEDULER),
    )


def test_the_clusters_cpus_are_max_jobs_with_their_reason(paths: Paths, host: BuildHost, options: BuildOptions) -> None:
    recipe = load(paths, "world-kepler-cu118")
    dist_host, dist_options = _dist(host, options, DistCluster(SCHEDULER, 2, 16, ASKED))
    plan = plan_for(recipe, dist_options, dist_host, paths, {})
    jobs = {s.name: s for s in plan.settings}["max_jobs"]
    assert (jobs.value, jobs.source, jobs.origin) == ("16", "host probe (sccache-dist)", Origin.HOST_PROBE)
    assert jobs.why == f"sccache-dist cluster: 2 build server(s), 16 CPUs ({ASKED})"
    [line] = [line for line in render_settings(plan.settings) if line.lstrip().startswith("max_jobs ")]
    assert line.split()[:2] == ["max_jobs", "16"] and line.endswith(f"[host probe (sccache-dist)] — {jobs.why}")
    assert {c.name: c.value for c in plan.env}["MAX_JOBS"] == "16"
    # what the user types still wins over the probe
    by_env = {s.name: s for s in plan_for(recipe, dist_options, dist_host, paths, {"MAX_JOBS": "3"}).settings}
    assert (by_env["max_jobs"].value, by_env["max_jobs"].source) == ("3", "environment MAX_JOBS")
    by_cli = dataclasses.replace(dist_options, max_jobs=5)
    assert {s.name: s.value for s in plan_for(recipe, by_cli, dist_host, paths, {}).settings}["max_jobs"] == "5"


def test_a_scheduler_without_servers_keeps_the_memory_default(
    paths: Paths, host: BuildHost, options: BuildOptions
) -> None:
    recipe = load(paths, "world-kepler-cu118")
    dist_host, dist_options = _dist(host, options, DistCluster(SCHEDULER, source=ASKED))
    jobs = {s.name: s for s in plan_for(recipe, dist_options, dist_host, paths, {}).settings}["max_jobs"]
    assert (jobs.value, jobs.source) == ("4", "default (host memory)")
    assert jobs.why == (
        "4 cores; 32.0 GiB of memory allows 10 jobs at 3 GiB each; "
        f"the sccache-dist scheduler {SCHEDULER} reported no build servers"
    )


def test_the_probe_asks_only_a_scheduler_the_build_names(paths: Paths) -> None:
    """None without a scheduler or with a compiler cache that is not sccache; without sccache on
    PATH nothing is asked (resolve then says sccache is missing). No subprocess runs here."""
    recipe = load(paths, "world-kepler-cu118")

    def probe(options: BuildOptions, sccache: Path | None, environ: dict[str, str], r: Recipe = recipe) -> object:
        return probe_dist_cluster(decide(r, options, environ), sccache, paths, environ)

    sccache = Path("/usr/bin/sccache")
    assert probe(BuildOptions(), sccache, {}) is None
    ccache = BuildOptions(dist_scheduler=SCHEDULER, compiler_cache="ccache")
    assert probe(ccache, sccache, {}) is None
    # a compiler cache named anywhere else than the command line is the same answer: nothing is asked
    named = BuildOptions(dist_scheduler=SCHEDULER)
    assert probe(named, sccache, {"SRCBUILD_COMPILER_CACHE": "ccache"}) is None
    assert probe(named, sccache, {"SRCBUILD_CCACHE": "0"}) is None
    in_recipe = dataclasses.replace(recipe, build=dataclasses.replace(recipe.build, compiler_cache="ccache"))
    assert probe(named, sccache, {}, in_recipe) is None
    unasked = probe(BuildOptions(), None, {"SRCBUILD_DIST_SCHEDULER": SCHEDULER})
    assert unasked == DistCluster(
        SCHEDULER, source="not asked: no sccache on PATH; scheduler from environment SRCBUILD_DIST_SCHEDULER"
    )
    assert isinstance(unasked, DistCluster) and not unasked.usable
