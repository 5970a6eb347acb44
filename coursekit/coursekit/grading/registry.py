"""The machine's grading runs, as a notebook running as the grading user (`--unsafe-no-sandbox`) cannot change them.

A run registers by binding a unix socket in Linux's abstract namespace: `<RUN_REGISTRY>.unsafe` for an unsafe run
(one at a time: a second bind fails), `<RUN_REGISTRY>.run.<pid>.<token>` for a sandboxed one. Such a name is no
file: no `rm`, `chmod` or `mount` reaches it, and it exists exactly as long as a process holds the socket open. The
grader holds it, and so do its runners (they inherit it; the kernels do not, `close_fds`). A notebook can free it
only by killing its own grader and runners, which ends its run (its rows become grader faults); it cannot free it
and keep running. The kernel's sandbox has a network namespace of its own, so a sandboxed notebook sees and binds
none of these names.

Each side binds its own name first and then lists the others (/proc/net/unix), so of two runs that start together at
least one sees the other: an unsafe run refuses to start beside any run, a sandboxed one beside an unsafe one.
`RunRegistration.check` looks again while the run goes on and at its end; a run that saw the other kind at any look
has its rows marked (grader.py). The old registry, a lock on /run and /tmp files, was undone by a notebook that
deleted the files (docs/grading.md, "Threat model").

Abstract names are Linux's and per network namespace: two graders in different network namespaces (e.g. containers)
do not see each other, and need not, as neither can reach the other's processes. Where the platform has no abstract
names, there is no bubblewrap either, so no sandboxed run to keep apart: an unsafe run registers nothing.
"""

import errno
import os
import secrets
import socket
from pathlib import Path

import psutil

RUN_REGISTRY = "coursekit-grade"  # the names' prefix (a test gives each test its own)
REGISTERED_RUNS = "/proc/net/unix"  # every unix socket of this network namespace, abstract names with a leading @
_UNSAFE, _SANDBOXED = "unsafe", "run"


class RunConflict(RuntimeError):
    """Another grading run on this machine rules this one out (an unsafe run beside any other); the message names
    it and what to do."""


class RunRegistration:
    """This run's name among the machine's grading runs (`register_run`), held until `release`.

    `fds` are the held sockets' descriptors, for the runners to inherit; `overlaps` the other runs of the kind that
    rules this one out, each as "pid N: command", seen by `check` during the run.
    """

    def __init__(self, sockets, unsafe):
        self.sockets, self.unsafe, self.overlaps = sockets, unsafe, []

    @property
    def fds(self):
        return tuple(sock.fileno() for sock in self.sockets)

    def check(self):
        """Looks for a run this one must not meet (for a sandboxed run: an unsafe one; for an unsafe run: any
        other); remembers and returns what it saw."""
        if not self.sockets:
            return []
        own = {_inode(sock) for sock in self.sockets}
        seen = [(name, inode) for name, inode in _registered() if inode not in own
                and (self.unsafe or name == _name(_UNSAFE))]
        for holder in _holders(seen):
            if holder not in self.overlaps:
                self.overlaps.append(holder)
        return list(self.overlaps)

    def release(self):
        for sock in self.sockets:
            sock.close()
        self.sockets = []


def register_run(unsafe):
    """Registers a grading run on this machine, before any work. Raises RunConflict naming the other run."""
    own = _name(_UNSAFE) if unsafe else _name(_SANDBOXED, f"{os.getpid()}.{secrets.token_hex(8)}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind("\0" + own)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise _conflict(unsafe, _holders([(own, None)])) from None
        if unsafe:  # no abstract names (not Linux): no bubblewrap, so no sandboxed run to keep apart
            return RunRegistration([], unsafe)
        raise
    registration = RunRegistration([sock], unsafe)
    if unsafe and not os.access(REGISTERED_RUNS, os.R_OK):
        registration.release()
        raise RunConflict(f"cannot check that no other grading run is active here: {REGISTERED_RUNS} cannot be read "
                          f"(mount /proc), or grade without --unsafe-no-sandbox")
    others = registration.check()
    if others:
        registration.release()
        raise _conflict(unsafe, others)
    return registration


def _conflict(unsafe, others):
    who = "; ".join(others) or "its process id could not be read"
    if unsafe:
        return RunConflict(f"another grading run is active on this machine ({who}). A run with --unsafe-no-sandbox "
                           f"runs notebooks as you, outside any sandbox, where they could reach that run: wait until "
                           f"it ends (or stop it), then grade again, or grade without --unsafe-no-sandbox")
    return RunConflict(f"a grading run with --unsafe-no-sandbox is active on this machine ({who}); its notebooks run "
                       f"outside any sandbox and could reach this run: wait until it ends (or stop it), then grade "
                       f"again")


def _name(kind, tail=""):
    return f"{RUN_REGISTRY}.{kind}" + (f".{tail}" if tail else "")


def _inode(sock):
    return os.fstat(sock.fileno()).st_ino


def _registered():
    """(name, inode) of every registered run in this network namespace, from /proc/net/unix."""
    try:
        lines = Path(REGISTERED_RUNS).read_text().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split()
        if len(parts) < 8 or not parts[7].startswith("@" + RUN_REGISTRY + "."):
            continue
        name = parts[7][1:]
        if name == _name(_UNSAFE) or name.startswith(_name(_SANDBOXED) + "."):
            found.append((name, int(parts[6])))
    return found


def _holders(names):
    """"pid N: command, unsafe|sandboxed" for each process holding one of `names` ((name, inode or None))."""
    wanted = {}
    for name, inode in names:
        for registered, registered_inode in _registered():
            if registered == name and inode in (None, registered_inode):
                wanted[registered_inode] = "unsafe" if name == _name(_UNSAFE) else "sandboxed"
    if not wanted:
        return []
    holders, parents = {}, {}
    for process in psutil.process_iter(["pid", "ppid"]):
        try:
            for link in os.listdir(f"/proc/{process.pid}/fd"):
                target = os.readlink(f"/proc/{process.pid}/fd/{link}")
                if target.startswith("socket:[") and int(target[8:-1]) in wanted:
                    kind = wanted[int(target[8:-1])]
                    command = " ".join(process.cmdline())[:120]
                    holders[process.pid] = (f"pid {process.pid}: {command}, "
                                            f"{'--unsafe-no-sandbox' if kind == 'unsafe' else kind}")
                    parents[process.pid] = process.info["ppid"]
                    break
        except (OSError, ValueError, psutil.Error):
            continue
    if not holders and wanted:
        return [f"a {kind} run whose process id could not be read" for kind in dict.fromkeys(wanted.values())]
    return [text for pid, text in holders.items() if parents[pid] not in holders]  # a grader, not its runners
