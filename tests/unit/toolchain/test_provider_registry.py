"""Each toolchain provider owns its variation: it reads its own data file, offers, and says what an
offer downloads; nothing outside it knows its table or branches on its name.

A new provider is one module, one line in ``PROVIDERS`` and its data file: the last test adds one
with exactly that and no other edit, and sees it read, offered, preferred and gathered by a mirror.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from srcbuild.mirror.gather import Download, fetches_of
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain import providers
from srcbuild.toolchain.data_files import load_facts, read_file
from srcbuild.toolchain.facts import DATA_DIR, ToolchainFacts
from srcbuild.toolchain.fetches import Fetches
from srcbuild.toolchain.needs import requests_for
from srcbuild.toolchain.providers import PROVIDERS, offers_for, provider_by_name, provider_order
from srcbuild.toolchain.providers.base import Context, Offer, Request
from srcbuild.toolchain.reach import Reach
from srcbuild.toolchain.store import Provisioned

FACTS = load_facts({})

# requests no catalog recipe makes, so that every provider is asked (NCCL from source: a GPU the
# NCCL wheel has no kernels for)
EXTRA_REQUESTS = (Request("nccl", "2.9.9", cuda="11.1", archs=("3.0",)),)


def _requests() -> list[Request]:
    paths = Paths.resolve(environ={})
    catalog = RecipeCatalog(paths)
    out = list(EXTRA_REQUESTS)
    for path in sorted(paths.recipe_dirs[-1].glob("*.toml")):
        recipe = catalog.load(path.stem)
        for sysroot in (None, "2.17"):  # a portable build asks for a sysroot gcc
            out += [r for r in requests_for(recipe, sysroot) if r not in out]
    return out


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_every_provider_reads_its_own_data_file(name: str) -> None:
    provider = PROVIDERS[name]
    assert provider.name == name and provider.tools
    assert (DATA_DIR / provider.data_file).is_file(), f"{name}: toolchain/data/{provider.data_file} is missing"
    assert provider.read_data(read_file(DATA_DIR, provider.data_file)) != ToolchainFacts()


def test_every_offer_says_what_it_downloads_and_every_provider_offers() -> None:
    offered: set[str] = set()
    for request in _requests():
        for offer in offers_for(request, FACTS):
            offered.add(offer.provider)
            fetches = PROVIDERS[offer.provider].fetches(offer, FACTS)
            assert fetches is not None and fetches != Fetches(), f"{offer.describe()}: no files named"
            reached = PROVIDERS[offer.provider].reached_at(offer, FACTS)
            assert reached is None or "://" in reached, f"{offer.describe()}: probed at {reached!r}"
    assert offered == set(PROVIDERS), f"never offered: {set(PROVIDERS) - offered} (add a request above)"


def test_the_data_files_are_the_providers_files() -> None:
    shipped = {p.name for p in DATA_DIR.glob("*.toml")}
    assert shipped == {p.data_file for p in PROVIDERS.values()}


class PrebuiltProvider:
    """A provider as a new module would write it: prebuilt CUDA tarballs from a site's server."""

    name = "prebuilt"
    tools: tuple[str, ...] = ("cuda",)
    data_file = "prebuilt.toml"

    def read_data(self, data: Mapping[str, Any]) -> ToolchainFacts:
        return ToolchainFacts(rows={self.name: tuple(dict(row) for row in data.get("tarball", []))})

    def _row(self, version: str, facts: ToolchainFacts) -> Mapping[str, Any] | None:
        return next((r for r in facts.rows.get(self.name, ()) if r["version"] == version), None)

    def offer(self, request: Request, facts: ToolchainFacts) -> Offer | None:
        row = self._row(request.version, facts)
        if row is None:
            return None
        return Offer(request, self.name, "cuda", request.version, f"the tarball {row['url']}", details=row)

    def fetches(self, offer: Offer, facts: ToolchainFacts) -> Fetches | None:
        row = self._row(offer.request.version, facts)
        return Fetches(downloads=(Download(row["url"], row["sha256"], None, offer.describe()),)) if row else None

    def reached_at(self, offer: Offer, facts: ToolchainFacts) -> str | None:
        return str(offer.details["url"])

    def provision(self, offer: Offer, facts: ToolchainFacts, target: Path, final: Path, ctx: Context) -> Provisioned:
        raise NotImplementedError("not run by this test")


def test_a_new_provider_is_one_module_one_registry_line_and_its_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROVIDERS, "prebuilt", PrebuiltProvider())  # the registry line
    (tmp_path / "prebuilt.toml").write_text(  # the data file
        '[[tarball]]\nversion = "99.1"\nurl = "https://cuda.example.org/cuda-99.1.tar.xz"\nsha256 = "ab12"\n'
    )
    facts = load_facts({"SRCBUILD_TOOLCHAIN_DATA": str(tmp_path)})
    assert facts.rows["prebuilt"][0]["version"] == "99.1"
    assert facts.runfiles == FACTS.runfiles  # the others' data is unchanged
    [offer] = offers_for(Request("cuda", "99.1"), facts)
    assert (offer.provider, offer.origin) == ("prebuilt", "the tarball https://cuda.example.org/cuda-99.1.tar.xz")
    got = fetches_of(offer, facts)  # what srcbuild mirror create gathers
    assert got is not None and [d.url for d in got.downloads] == ["https://cuda.example.org/cuda-99.1.tar.xz"]
    assert provider_by_name("prebuilt").name == "prebuilt"
    assert provider_order({"SRCBUILD_TOOLCHAIN_PROVIDERS": "prebuilt,redist"}) == ("prebuilt", "redist")
    assert Reach(facts, {}).source(offer) == "https://cuda.example.org/cuda-99.1.tar.xz"  # probed before use
    # and CUDA 11.8 still comes from the built-in providers, in their order
    assert offers_for(Request("cuda", "11.8"), facts)[0].provider == providers.offers_for(
        Request("cuda", "11.8"), FACTS
    )[0].provider


def test_no_module_outside_the_providers_branches_on_a_provider_name() -> None:
    import re

    import srcbuild

    root = Path(srcbuild.__file__).parent
    names = "|".join(PROVIDERS)
    by_name = re.compile(rf"""provider\s*(?:[!=]=|not in|in)\s*[(\[]?\s*["']({names})["']""")
    found = [
        f"{path.relative_to(root.parent)}:{number}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        if root / "toolchain" / "providers" not in path.parents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if by_name.search(line)
    ]
    assert found == [], "ask the provider (a method of the Provider protocol) instead"
    assert by_name.search('        if offer.provider == "redist":')
