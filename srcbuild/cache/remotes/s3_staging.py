"""How a push reaches an S3 bucket without leaving a half entry, and how the next push cleans up
after one that was killed.

A push uploads an entry's objects under its own staging prefix, outside ``entries/`` (which is all
a reader lists), and only then copies them into place, the manifest last::

    <prefix>/staging/<owner>/lease                                # refreshed while the push runs
    <prefix>/staging/<owner>/<fp>/<entry-key>/{<wheel>, build.log, manifest.json.sig, manifest.json}

``<owner>`` is the pushing process's token (``srcbuild.cache.owner``: host, boot id, PID
namespace, pid, start time, nonce). The lease object is written before anything else and
rewritten every ``LEASE_REFRESH`` seconds by a thread while the push runs; the staged manifest is
uploaded after the rest, so its presence means the staging is complete. When the push ends,
however it ends short of being killed outright, it deletes its staging (the lease last); a push
stopped by an error or a signal while copying also deletes the objects it copied into place.

A push killed outright (kill -9, a lost machine) leaves its staging. Every push first sweeps the
staging of dead owners: an owner on this host, boot and PID namespace is dead when its pid no
longer runs with its start time (exact, no waiting); any other owner is dead when its lease is
older than ``LEASE_SECONDS`` by the bucket's clock (the ``Date`` of the listing). A dead owner's
complete staging is finished (copied into place, manifest last, unless the entry is there
already); an incomplete one is deleted. So no object of a killed push survives the next push,
and a live push elsewhere, which keeps its lease fresh, is never touched.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from srcbuild.cache.manifest import LOG_NAME, MANIFEST_NAME, Manifest
from srcbuild.cache.owner import Owner
from srcbuild.cache.store import SIGNATURE_NAME
from srcbuild.errors import SrcbuildError
from srcbuild.limits import MAX_LISTED, MAX_MANIFEST

STAGING = "staging"
LEASE_NAME = "lease"
LEASE_SECONDS = 600.0  # a push on another machine whose lease is this old (bucket clock) is dead
LEASE_REFRESH = 60.0  # how often a running push rewrites its lease


class Bucket(Protocol):
    """What the staging needs of an S3 remote (``remotes.s3.S3Remote``)."""

    url: str
    bucket: str

    @property
    def client(self) -> Any: ...

    def _key(self, *parts: str) -> str: ...

    def _call(self, what: str, func: Any, **kwargs: Any) -> Any: ...

    def _read(self, key: str, limit: int, what: str) -> bytes: ...


def _delete(remote: Bucket, keys: list[str]) -> list[str]:
    """Delete ``keys`` one by one (a failure leaves that key for the next sweep); the keys deleted."""
    deleted = []
    for key in keys:
        with contextlib.suppress(Exception):
            remote.client.delete_object(Bucket=remote.bucket, Key=key)
            deleted.append(key)
    return deleted


def _copy(remote: Bucket, source: str, target: str, what: str) -> None:
    remote._call(
        what,
        remote.client.copy_object,
        Bucket=remote.bucket,
        Key=target,
        CopySource={"Bucket": remote.bucket, "Key": source},
    )


@dataclass
class Staging:
    """One push's staging prefix, its lease, and what it has written."""

    remote: Bucket
    manifest: Manifest
    owner: Owner = field(default_factory=Owner.current)
    staged: list[str] = field(default_factory=list)  # staged object keys, in upload order
    placed: list[str] = field(default_factory=list)  # keys copied into entries/
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def root(self) -> str:
        return self.remote._key(STAGING, self.owner.token)

    @property
    def lease_key(self) -> str:
        return f"{self.root}/{LEASE_NAME}"

    def staged_key(self, name: str) -> str:
        m = self.manifest
        return f"{self.root}/{m.fingerprint[:2]}/{m.fingerprint}/{m.entry_key}/{name}"

    def final_key(self, name: str) -> str:
        m = self.manifest
        return self.remote._key("entries", m.fingerprint[:2], m.fingerprint, m.entry_key, name)

    def _write_lease(self) -> None:
        body = json.dumps({"owner": self.owner.token, "lease_seconds": LEASE_SECONDS, "written": time.time()})
        self.remote._call(
            "write the push's lease",
            self.remote.client.put_object,
            Bucket=self.remote.bucket,
            Key=self.lease_key,
            Body=body.encode("utf-8"),
            ContentType="application/json",
        )

    def _refresh(self) -> None:
        while not self._stop.wait(LEASE_REFRESH):
            with contextlib.suppress(Exception):  # a missed refresh is retried; the lease lasts 10 of them
                self._write_lease()

    @contextlib.contextmanager
    def leased(self) -> Iterator[Staging]:
        """Hold the lease while the block stages and publishes; afterwards delete the staging (and,
        when the block failed after copying into place, what it copied), the lease last."""
        self._write_lease()
        refresher = threading.Thread(target=self._refresh, name="srcbuild-s3-lease", daemon=True)
        refresher.start()
        try:
            yield self
        except BaseException:
            if self.placed and not self._published():  # a half-copied entry: its objects go again
                _delete(self.remote, list(reversed(self.placed)))
            raise
        finally:
            self._stop.set()
            refresher.join(timeout=5)
            _delete(self.remote, list(reversed(self.staged)))
            _delete(self.remote, [self.lease_key])

    def _published(self) -> bool:
        """Whether the entry's manifest is in place (a copy may have completed as the push stopped)."""
        try:
            self.remote.client.head_object(Bucket=self.remote.bucket, Key=self.final_key(MANIFEST_NAME))
        except Exception:  # absent, or the bucket cannot say: what was copied is deleted
            return False
        return True

    def put(self, name: str, what: str, **kwargs: Any) -> None:
        """Upload one object of the entry under the staging prefix."""
        key = self.staged_key(name)
        self.staged.append(key)
        self.remote._call(what, self.remote.client.put_object, Bucket=self.remote.bucket, Key=key, **kwargs)

    def publish(self) -> None:
        """Copy the staged objects into ``entries/``, the manifest last."""
        names = [key.rsplit("/", 1)[1] for key in self.staged]
        for name in sorted(names, key=lambda n: n == MANIFEST_NAME):
            target = self.final_key(name)
            self.placed.append(target)
            _copy(self.remote, self.staged_key(name), target, f"publish {name}")


def _server_now(page: dict[str, Any]) -> float:
    """The bucket's clock: the ``Date`` of its answer (this machine's clock when it has none)."""
    date = page.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    if date:
        with contextlib.suppress(TypeError, ValueError):
            return email.utils.parsedate_to_datetime(date).timestamp()
    return time.time()


def _finish(remote: Bucket, objects: dict[str, float], root: str) -> None:
    """Copy a dead owner's complete staging into place (manifest last) unless the entry is there;
    nothing when the staging is incomplete or does not hold what its manifest names."""
    manifests = [k for k in objects if k.endswith("/" + MANIFEST_NAME)]
    if len(manifests) != 1:
        return
    try:
        manifest = Manifest.loads(remote._read(manifests[0], MAX_MANIFEST, "a staged manifest"), manifests[0])
    except SrcbuildError:
        return
    m = manifest
    entry = f"{root}/{m.fingerprint[:2]}/{m.fingerprint}/{m.entry_key}/"
    allowed = {m.wheel, LOG_NAME, SIGNATURE_NAME, MANIFEST_NAME}
    names = {k[len(entry) :] for k in objects if k.startswith(entry)}
    if manifests[0] != entry + MANIFEST_NAME or m.wheel not in names or not names <= allowed:
        return
    final = remote._key("entries", m.fingerprint[:2], m.fingerprint, m.entry_key)
    with contextlib.suppress(Exception):
        remote.client.head_object(Bucket=remote.bucket, Key=f"{final}/{MANIFEST_NAME}")
        return  # the entry is complete already
    for name in sorted(names, key=lambda n: n == MANIFEST_NAME):
        _copy(remote, entry + name, f"{final}/{name}", f"finish an interrupted push of {m.wheel}")


def sweep_staging(remote: Bucket) -> list[str]:
    """Finish or delete the staging of every dead owner (see the module docstring); the keys deleted."""
    prefix = remote._key(STAGING) + "/"
    paginator = remote.client.get_paginator("list_objects_v2")
    pages = remote._call("list staged pushes", lambda: list(paginator.paginate(Bucket=remote.bucket, Prefix=prefix)))
    if not pages:
        return []
    now = _server_now(pages[0])
    groups: dict[str, dict[str, float]] = {}
    listed = 0
    for page in pages:
        for item in page.get("Contents", []):
            listed += 1
            if listed > MAX_LISTED:
                return []
            owner = item["Key"][len(prefix) :].split("/", 1)[0]
            groups.setdefault(owner, {})[item["Key"]] = item["LastModified"].timestamp()
    swept: list[str] = []
    for token, objects in groups.items():
        owner = Owner.parse(token)
        alive = owner.alive_here() if owner is not None else None
        if alive:
            continue
        lease = objects.get(prefix + token + "/" + LEASE_NAME)
        if alive is None and now - (lease if lease is not None else max(objects.values())) < LEASE_SECONDS:
            continue  # another machine's push, maybe running: its lease is fresh
        root = prefix + token
        with contextlib.suppress(SrcbuildError):
            _finish(remote, objects, root)
        lease_key = root + "/" + LEASE_NAME
        swept += _delete(remote, sorted(k for k in objects if k != lease_key))
        if lease_key in objects:
            swept += _delete(remote, [lease_key])
    return swept
