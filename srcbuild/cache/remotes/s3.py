"""An S3-compatible bucket as a remote (boto3): ``s3://bucket/prefix``.

Objects use the local store's layout under the prefix:
``<prefix>/entries/<fp[:2]>/<fp>/<entry-key>/{<wheel>, build.log, manifest.json}``. The manifest
is uploaded last, so an entry is visible only once its wheel is complete. Each wheel is uploaded
with its SHA-256 (``ChecksumSHA256``) so a server that checks it (AWS S3 does; moto does not)
rejects a copy damaged in flight, and every download is hashed again by ``srcbuild.cache.transfer``.

Endpoint: ``--s3-endpoint-url`` > ``SRCBUILD_S3_ENDPOINT_URL`` > ``AWS_ENDPOINT_URL``; credentials
and region come from the usual AWS chain (environment, ``~/.aws``, instance roles); the region
defaults to us-east-1 when none is configured.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from srcbuild.cache.manifest import LOG_NAME, MANIFEST_NAME, Manifest
from srcbuild.cache.store import CacheEntry
from srcbuild.errors import CacheIntegrityError, HostError, NotFoundError, UsageError

DEFAULT_REGION = "us-east-1"


def split_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` -> ("bucket", "some/prefix")."""
    parsed = urlparse(url)
    if not parsed.netloc:
        raise UsageError(f"{url}: no bucket name", "write the remote as s3://bucket/prefix")
    return parsed.netloc, parsed.path.strip("/")


class S3Remote:
    """A wheel store in an S3 bucket."""

    writable = True

    def __init__(self, url: str, endpoint_url: str | None = None, client: Any = None) -> None:
        self.url = url
        self.bucket, self.prefix = split_s3_url(url)
        self.endpoint_url = endpoint_url
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            session = boto3.session.Session()
            self._client = session.client(
                "s3", endpoint_url=self.endpoint_url, region_name=session.region_name or DEFAULT_REGION
            )
        return self._client

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def _entry_key(self, manifest: Manifest, name: str) -> str:
        fp = manifest.fingerprint
        return self._key("entries", fp[:2], fp, manifest.entry_key, name)

    def _call(self, what: str, func: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            return func(**kwargs)
        except NoCredentialsError:
            raise UsageError(
                f"{self.url}: no AWS credentials to {what}",
                "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or configure a profile in ~/.aws",
            ) from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchBucket", "404", "NoSuchKey"):
                raise NotFoundError(
                    f"{self.url}: cannot {what}: {code}", f"check that the bucket {self.bucket!r} exists"
                ) from None
            if code in ("BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"):
                raise CacheIntegrityError(
                    f"{self.url}: the server rejected the upload ({code}): the bytes changed in flight",
                    "run the push again",
                ) from None
            raise HostError(
                f"{self.url}: cannot {what}: {exc}", "check the bucket, the endpoint and your access"
            ) from None
        except BotoCoreError as exc:
            raise NotFoundError(
                f"{self.url}: cannot {what}: {exc}",
                "check the endpoint (--s3-endpoint-url, SRCBUILD_S3_ENDPOINT_URL or AWS_ENDPOINT_URL) and the network",
            ) from None

    def _manifest_keys(self, fp: str | None) -> list[str]:
        prefix = self._key("entries", fp[:2], fp) + "/" if fp else self._key("entries") + "/"
        keys: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        pages = self._call("list entries", lambda: list(paginator.paginate(Bucket=self.bucket, Prefix=prefix)))
        for page in pages:
            for item in page.get("Contents", []):
                if item["Key"].endswith("/" + MANIFEST_NAME):
                    keys.append(item["Key"])
        return keys

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        found = []
        for key in self._manifest_keys(fp):
            body = self._call("read a manifest", self.client.get_object, Bucket=self.bucket, Key=key)["Body"].read()
            try:
                found.append(Manifest.loads(body.decode("utf-8"), f"s3://{self.bucket}/{key}"))
            except (CacheIntegrityError, UnicodeDecodeError):
                continue  # a damaged entry on the remote is skipped, never used
        return found

    def fetch(self, manifest: Manifest, dest_dir: Path) -> tuple[Path, Path | None]:
        wheel = dest_dir / manifest.wheel
        self._call(
            f"download {manifest.wheel}",
            self.client.download_file,
            Bucket=self.bucket,
            Key=self._entry_key(manifest, manifest.wheel),
            Filename=str(wheel),
        )
        from botocore.exceptions import BotoCoreError, ClientError

        log: Path | None = dest_dir / LOG_NAME
        try:
            self.client.download_file(Bucket=self.bucket, Key=self._entry_key(manifest, LOG_NAME), Filename=str(log))
        except (ClientError, BotoCoreError):  # the build log is optional
            log = None
        return wheel, log

    def _has(self, manifest: Manifest) -> bool:
        from botocore.exceptions import ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._entry_key(manifest, MANIFEST_NAME))["Body"]
            data = json.loads(body.read().decode("utf-8"))
        except (ClientError, ValueError):
            return False
        return isinstance(data, dict) and data.get("sha256") == manifest.sha256

    def push(self, entry: CacheEntry) -> bool:
        manifest = entry.manifest
        if self._has(manifest):
            return False
        checksum = base64.b64encode(bytes.fromhex(manifest.sha256)).decode("ascii")
        with open(entry.wheel_path, "rb") as body:
            self._call(
                f"upload {manifest.wheel}",
                self.client.put_object,
                Bucket=self.bucket,
                Key=self._entry_key(manifest, manifest.wheel),
                Body=body,
                ChecksumSHA256=checksum,
                Metadata={"sha256": manifest.sha256},
            )
        if entry.log_path is not None:
            with open(entry.log_path, "rb") as body:
                self._call(
                    "upload the build log",
                    self.client.put_object,
                    Bucket=self.bucket,
                    Key=self._entry_key(manifest, LOG_NAME),
                    Body=body,
                )
        self._call(
            "upload the manifest",
            self.client.put_object,
            Bucket=self.bucket,
            Key=self._entry_key(manifest, MANIFEST_NAME),
            Body=manifest.dumps().encode("utf-8"),
            ContentType="application/json",
        )
        return True
