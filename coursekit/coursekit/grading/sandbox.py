"""The sandbox a submission's kernel runs in: bubblewrap, the sandbox Flatpak uses (docs/grading.md, "Threat model").

The kernel runs in new user, PID, network, mount, IPC, UTS and cgroup namespaces, as an unprivileged user: the
user who runs the grader, or, when that is root, a fresh unused uid (root first bind-mounts what the kernel reads
into a private mount namespace, then `setpriv` drops to that uid before `bwrap` starts). It sees, read-only, the
system's `/usr`, the Python environment, the course's kernel packages and its data folders (`data_folders`); it writes
only to its own tmpfs home and `/tmp` (each `Limits.scratch_bytes`), and to the folder of its connection file.
It gets a small environment (`ENVIRONMENT_PASSED`), never the grader's. The runner enforces the other limits.

Where bwrap is missing or cannot create namespaces, `probe()` raises `SandboxUnavailable` with the fix;
`unsafe=True` (`coursekit grade --unsafe-no-sandbox`) runs the kernel without isolation instead, never silently.
"""

import ctypes
import functools
import os
import pwd
import random
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from coursekit import course

SANDBOX_HOME = "/home/learner"
SANDBOX_UID = 1000
SCRATCH_MOUNTS = ("/tmp", "/dev/shm", SANDBOX_HOME)  # the sandbox's tmpfs mounts: what is written there is memory
MAX_SOCKET_PATH = 107  # bytes of a unix socket's path (sun_path, without its NUL)
# What the sandbox adds to its temporary folder's path for a kernel socket: /coursekit-grade-XXXXXXXX/runtime/socket-N
_SOCKET_TAIL = len("/coursekit-grade-12345678/runtime/socket-65535")
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
# What the kernel gets of the grader's environment: settings the notebooks read, nothing else.
# The course adds its own (its `kernel_environment` hook).
ENVIRONMENT_PASSED = ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL", "OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                      "TF_NUM_INTEROP_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`, Fedora: `sudo dnf install "
                "bubblewrap`; `make test` installs it)")
UNSAFE_HINT = ("or, for notebooks you trust, pass --unsafe-no-sandbox (the kernel then runs as you, with your files "
               "and network)")


@dataclass(frozen=True)
class Limits:
    """What one submission may use. The runner stops the notebook at the first limit it passes."""

    memory_bytes: int = 4 * 2**30  # resident memory of the sandbox's processes and its tmpfs files, together
    tasks: int = 512  # processes and threads (RLIMIT_NPROC of the sandbox's uid)
    scratch_bytes: int = 2**30  # each of the tmpfs home, /tmp and /dev/shm (at most memory_bytes)
    output_bytes: int = 64 * 2**20  # everything the kernel prints or sends back, together
    file_bytes: int = 512 * 2**20  # one file (RLIMIT_FSIZE)


class SandboxUnavailable(RuntimeError):
    """bwrap is missing or cannot create its namespaces here; the message names the fix."""


def _is_root():
    return os.geteuid() == 0


def _root_tools():
    return [tool for tool in ("unshare", "setpriv", "mount") if shutil.which(tool) is None]


_PROBED = {}


def probe(read_only_paths=()):
    """Starts Python once in a sandbox; raises SandboxUnavailable naming the fix when that fails. Cached."""
    key = tuple(map(str, read_only_paths))
    if key in _PROBED:
        if _PROBED[key]:
            raise SandboxUnavailable(_PROBED[key])
        return
    problem = None
    if shutil.which("bwrap") is None:
        problem = f"`bwrap` is not installed: {INSTALL_HINT}, {UNSAFE_HINT}."
    elif _is_root() and _root_tools():
        problem = (f"the grader runs as root and drops to an unprivileged user with util-linux's "
                   f"{', '.join(_root_tools())}, which are missing: install util-linux, {UNSAFE_HINT}.")
    else:
        sandbox = Sandbox(read_only_paths=read_only_paths)
        try:
            process = sandbox.popen([sys.executable, "-c", "import sys"], {"PATH": "/usr/bin:/bin"},
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                output, _ = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
            if process.returncode != 0:
                problem = (f"bubblewrap could not start a sandbox here ({output.decode(errors='replace').strip()[-300:]}"
                           f"). Unprivileged user namespaces are probably off: enable them (`sudo sysctl -w "
                           f"kernel.unprivileged_userns_clone=1`, `user.max_user_namespaces=15000`, or on Ubuntu "
                           f"24.04 `kernel.apparmor_restrict_unprivileged_userns=0`), or run the grader in a container "
                           f"that allows them, {UNSAFE_HINT}.")
        finally:
            sandbox.close()
    _PROBED[key] = problem
    if problem:
        raise SandboxUnavailable(problem)


def python_paths():
    """The folders of this Python environment (prefixes, and the course's kernel packages), which the kernel reads."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               *(str(course.package_folder(name)) for name in course.kernel_packages())}
    return sorted({Path(folder).resolve() for folder in folders})


def package_path():
    """PYTHONPATH for the kernel packages: the folder above each (an editable install's source tree)."""
    return os.pathsep.join(dict.fromkeys(str(course.package_folder(name).parent) for name in course.kernel_packages()))


def data_paths():
    """The folders the course reads data from (its `data_folders` hook: datasets, cached models), where they exist."""
    folders = course.hook("data_folders", list)()
    return [Path(folder).resolve() for folder in dict.fromkeys(folders) if folder and Path(folder).is_dir()]


def exposed_paths(hidden=()):
    """Every folder the kernel sees read-only; SandboxUnavailable when one would expose a `hidden` path."""
    paths = [path for path in [*python_paths(), *data_paths()] if not _under(path, Path("/usr"))]
    for path in paths:
        for secret in map(Path, hidden):
            secret = secret.resolve()
            if secret == path or _under(secret, path):
                raise SandboxUnavailable(f"the sandbox would show the kernel {secret} through {path} (the Python "
                                         f"environment, a kernel package or a data folder contains it); move it elsewhere")
    return paths


def _under(path, folder):
    return Path(path).is_relative_to(folder) and Path(path) != Path(folder)


class Sandbox:
    """One submission's sandbox: its folder on the host, and `popen` to start a command inside it.

    Args:
        limits: `Limits`.
        unsafe: bool, defaults to False. Start commands without isolation (--unsafe-no-sandbox).
        read_only_paths: host folders the command sees read-only at their own paths (see `exposed_paths`).
        cpu_seconds: float or None. CPU time each process may use (RLIMIT_CPU).
    """

    def __init__(self, limits=Limits(), unsafe=False, read_only_paths=(), cpu_seconds=None):
        self.limits, self.unsafe, self.read_only_paths = limits, unsafe, [Path(path) for path in read_only_paths]
        self.cpu_seconds = cpu_seconds
        dropping = _is_root() and not unsafe
        self.root = Path(tempfile.mkdtemp(prefix="coursekit-grade-", dir=_temp_base(everyone=dropping)))
        self.root.chmod(0o711)  # the unprivileged uid may pass through to its runtime folder, not list it
        self.runtime = self.root / "runtime"  # the connection file and the kernel's sockets
        self.runtime.mkdir(mode=0o700)
        self.uid = self.gid = None
        if dropping:
            self.uid = self.gid = _unused_id()
            os.chown(self.runtime, self.uid, self.gid)
        if unsafe:
            self.home, self.tmp = self.root / "home", self.root / "tmp"
            self.home.mkdir(mode=0o700)
            self.tmp.mkdir(mode=0o700)
        else:
            self.home, self.tmp = Path(SANDBOX_HOME), Path("/tmp")
        self.process = None
        self.adopting = False  # unsafe: this process adopts the kernel's orphans, and `stop` kills them too

    def adopt_orphans(self):
        """Makes this process (the runner) a child subreaper: a process the unsafe kernel leaves behind, double-forked
        into a session of its own, becomes this process's child instead of init's, so `stop` finds and kills it."""
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        self.adopting = True

    def give(self, path):
        """Makes a file the grader wrote in `runtime` (the connection file) the sandbox user's."""
        if self.uid is not None:
            os.chown(path, self.uid, self.gid)

    def popen(self, argv, environment, **kwargs):
        """Starts `argv` in the sandbox with exactly `environment`; returns the Popen (of bwrap, or of `argv`)."""
        if self.unsafe:
            command, cwd = list(argv), str(self.home)
        else:
            command, cwd = self._bwrap_command(argv, environment), str(self.root)
            environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bwrap clears it for the kernel
        self.process = subprocess.Popen(command, env=environment, cwd=cwd, stdin=subprocess.DEVNULL,
                                        start_new_session=True, close_fds=True, preexec_fn=self._limit_setter(),
                                        **kwargs)
        return self.process

    def _limit_setter(self):
        """The rlimits, set in the child before exec and inherited by everything the notebook starts."""
        cpu = int(self.cpu_seconds) if self.cpu_seconds else resource.RLIM_INFINITY
        # RLIMIT_NPROC counts every task of the uid: the sandbox's own uid when root, else the grader's user's
        tasks = self.limits.tasks + (0 if self.uid is not None else _tasks_of_user())
        _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if hard != resource.RLIM_INFINITY:
            tasks = min(tasks, hard)
        _libc()  # loaded here, before the fork: the child only calls it
        limits = ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_FSIZE, self.limits.file_bytes),
                  (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, tasks))

        def set_limits():
            for name, value in limits:
                resource.setrlimit(name, (value, value))
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the kernel (or bwrap) dies with the runner

        return set_limits

    def _bwrap_command(self, argv, environment):
        size = str(min(self.limits.scratch_bytes, self.limits.memory_bytes))  # what it writes there is memory
        command = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                   "--new-session", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
                   "--ro-bind", "/usr", "/usr"]
        for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(name):
                command += ["--symlink", os.readlink(name), name]
            elif os.path.isdir(name):
                command += ["--ro-bind", name, name]
        for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts"):
            command += ["--ro-bind-try", name, name]
        accounts = self.root / "etc"
        accounts.mkdir(exist_ok=True)
        (accounts / "passwd").write_text(f"learner:x:{SANDBOX_UID}:{SANDBOX_UID}:learner:{SANDBOX_HOME}:/bin/sh\n")
        (accounts / "group").write_text(f"learner:x:{SANDBOX_UID}:\n")
        (accounts / "hosts").write_text("127.0.0.1 localhost sandbox\n")
        binds = [(accounts / name, f"/etc/{name}") for name in ("passwd", "group", "hosts")]
        binds += [(path, str(path)) for path in self.read_only_paths]
        command += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--ro-bind", "/sys",
                    "/sys", "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", SANDBOX_HOME]
        mounts = []  # as root: bind each folder into a private mount namespace first, where the uid can reach it
        for index, (source, target) in enumerate(binds):
            if self.uid is not None:
                staged = self.root / "view" / str(index)
                staged.mkdir(parents=True, exist_ok=True)
                if Path(source).is_file():
                    staged = staged / "file"
                    staged.touch(exist_ok=True)
                mounts.append(f"mount --rbind {shlex.quote(str(source))} {shlex.quote(str(staged))}")
                source = staged
            command += ["--ro-bind", str(source), target]
        command += ["--bind", str(self.runtime), str(self.runtime), "--chdir", SANDBOX_HOME, "--clearenv"]
        for key, value in environment.items():
            command += ["--setenv", key, value]
        command += ["--", *argv]
        if self.uid is None:
            return command
        script = " && ".join([*mounts, f'exec setpriv --reuid={self.uid} --regid={self.gid} --clear-groups -- "$@"'])
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", *command]

    def tree(self):
        """The sandbox's processes (bwrap and everything below it, and the orphans it adopts) that still run."""
        if self.process is None:
            return []
        processes = []
        try:
            top = psutil.Process(self.process.pid)
            processes += [top, *top.children(recursive=True)]
        except psutil.Error:
            pass
        if self.adopting:  # the runner's other children are the kernel's orphans (it has no other)
            processes += psutil.Process().children(recursive=True)
        alive = []
        for process in dict.fromkeys(processes):
            try:
                if process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.Error:
                pass
        return alive

    def scratch_usage(self):
        """Bytes the kernel holds in files on its tmpfs mounts (/tmp, /dev/shm, its home), which are memory: read
        with statvfs through /proc/<pid>/root of a process inside the sandbox's mount namespace."""
        if self.unsafe or self.process is None:
            return 0
        try:
            outside = os.readlink(f"/proc/{self.process.pid}/ns/mnt")
        except OSError:
            return 0
        for process in self.tree()[1:]:
            try:
                if os.readlink(f"/proc/{process.pid}/ns/mnt") == outside:
                    continue  # bwrap's monitor, or root's staging shell: not the sandbox's mounts
                used = 0
                for mount in SCRATCH_MOUNTS:
                    info = os.statvfs(f"/proc/{process.pid}/root{mount}")
                    used += (info.f_blocks - info.f_bfree) * info.f_frsize
                return used
            except OSError:
                continue
        return 0

    def usage(self):
        """(resident bytes, tasks) of the sandbox's processes together."""
        memory = tasks = 0
        for process in self.tree():
            try:
                memory += process.memory_info().rss
                tasks += process.num_threads()
            except psutil.Error:
                pass
        return memory, tasks

    def runtime_bytes(self, most_entries=10_000):
        """Bytes the kernel wrote into its runtime folder (the one host folder it can write to)."""
        total, stack, seen = 0, [self.runtime], 0
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > most_entries:
                    return float("inf")
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
                else:
                    total += info.st_size
        return total

    def stop(self):
        """Kills every process of the sandbox (bwrap's death ends its PID namespace; the rest are killed too; an unsafe
        kernel's process group, and with `adopt_orphans` whatever it left behind)."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # its session: it was started with a new one
            except (ProcessLookupError, PermissionError):
                pass
        for _ in range(10):
            processes = self.tree()
            if not processes:
                return
            for process in processes:
                try:
                    process.send_signal(signal.SIGKILL)
                except psutil.Error:
                    pass
            psutil.wait_procs(processes, timeout=2)

    def close(self):
        self.stop()
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


@functools.cache
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option, value):
    """Linux prctl(2); a no-op where libc has none (the sandbox needs Linux anyway)."""
    try:
        _libc().prctl(option, int(value), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _reachable_temp():
    """A temporary folder every user can pass through ($TMPDIR may sit in root's private folder)."""
    return _temp_base(everyone=True)


def _temp_base(everyone=False):
    """The folder of the sandbox's folder: $TMPDIR (the system's temporary folder), unless its path is too long for
    the kernel's sockets in it (a unix socket's path has at most 107 bytes) or, with `everyone`, some user cannot
    pass through it; then /tmp, /var/tmp or /dev/shm."""
    for folder in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        path = Path(folder).resolve()
        if (path.is_dir() and os.access(path, os.W_OK | os.X_OK)
                and len(os.fsencode(str(path))) + _SOCKET_TAIL <= MAX_SOCKET_PATH
                and (not everyone or all(os.stat(part).st_mode & stat.S_IXOTH for part in [path, *path.parents]))):
            return str(path)
    raise SandboxUnavailable(f"no temporary folder for the kernel's sockets: {tempfile.gettempdir()} is too long "
                             f"(a socket's path has at most {MAX_SOCKET_PATH} bytes) and /tmp, /var/tmp and /dev/shm "
                             f"are missing{' or not world-traversable' if everyone else ''}; set TMPDIR to a short "
                             f"writable folder")


def _unused_id():
    """A uid (and gid) no account and no running process uses, for one sandbox when the grader runs as root."""
    used = {process.info["uids"].real for process in psutil.process_iter(["uids"]) if process.info["uids"]}
    while True:
        candidate = random.randrange(200_000, 2**31 - 2)
        try:
            pwd.getpwuid(candidate)
        except KeyError:
            if candidate not in used:
                return candidate


def _tasks_of_user():
    uid = os.getuid()
    count = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        if process.info["uids"] and process.info["uids"].real == uid:
            count += process.info["num_threads"] or 1
    return count
