"""Which process wrote something, and whether it is still alive: an owner token a writer puts in
the names of what it stages where no lock can reach (an S3 bucket).

A token names the machine (its host name), the boot (the kernel's random boot id), the PID
namespace, the process id and the process's start time (clock ticks since boot, from
``/proc/<pid>/stat``), plus a random nonce so that two writes of one process never share a name.
A reader on the same machine, boot and PID namespace tells exactly whether the owner lives: the
pid must exist and have started at the same tick (a reused pid has another start time). Anywhere
else (another machine, a container with its own PID namespace, a machine that rebooted) it
cannot tell, and ``alive_here`` says None: the writer's lease decides instead.

Tokens use letters, digits, ``.`` and ``-`` with ``_`` between fields, so they are safe in an
S3 key and in a file name.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from srcbuild.cache.staging import host_tag
from srcbuild.records import record

_PROC = Path("/proc")
_TOKEN = re.compile(r"([A-Za-z0-9.-]{1,64})_([0-9a-f-]{0,36})_([0-9]{0,20})_([0-9]{1,10})_([0-9]{1,20})_([0-9a-f]{12})")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def boot_id(proc: Path = _PROC) -> str:
    """This boot's id (a UUID the kernel draws at boot), or "" where the system has none."""
    value = _read(proc / "sys" / "kernel" / "random" / "boot_id").lower()
    return value if re.fullmatch(r"[0-9a-f-]{1,36}", value) else ""


def pid_namespace(proc: Path = _PROC) -> str:
    """The inode number of this process's PID namespace (``pid:[4026531836]``), or ""."""
    try:
        link = os.readlink(proc / "self" / "ns" / "pid")
    except OSError:
        return ""
    found = re.fullmatch(r"pid:\[([0-9]{1,20})\]", link)
    return found.group(1) if found else ""


def start_ticks(pid: int, proc: Path = _PROC) -> int | None:
    """When process ``pid`` started (field 22 of ``/proc/<pid>/stat``), or None when it does not exist."""
    stat = _read(proc / str(pid) / "stat")
    _, paren, rest = stat.rpartition(")")  # the command name may hold spaces and parentheses
    fields = rest.split()
    if not paren or len(fields) < 20 or not fields[19].isdigit():
        return None
    return int(fields[19])


@record
class Owner:
    """One process as a token names it."""

    host: str
    boot: str
    pidns: str
    pid: int
    start: int
    nonce: str

    @classmethod
    def current(cls) -> Owner:
        """This process (a fresh nonce each call)."""
        pid = os.getpid()
        return cls(host_tag(), boot_id(), pid_namespace(), pid, start_ticks(pid) or 0, secrets.token_hex(6))

    @property
    def token(self) -> str:
        return f"{self.host}_{self.boot}_{self.pidns}_{self.pid}_{self.start}_{self.nonce}"

    @classmethod
    def parse(cls, token: str) -> Owner | None:
        """The owner a token names; None when it is not a token."""
        found = _TOKEN.fullmatch(token)
        if found is None:
            return None
        host, boot, pidns, pid, start, nonce = found.groups()
        return cls(host, boot, pidns, int(pid), int(start), nonce)

    def alive_here(self, proc: Path = _PROC) -> bool | None:
        """True or False when this machine can tell (same host, boot and PID namespace); else None."""
        here = (host_tag(), boot_id(proc), pid_namespace(proc))
        if not self.boot or not self.pidns or (self.host, self.boot, self.pidns) != here:
            return None
        return start_ticks(self.pid, proc) == self.start
