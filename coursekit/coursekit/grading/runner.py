"""The runner: one process per submission, started by the grader (`python -m coursekit.grading.runner FD`).

It reads its job (the plan's steps and the checker's context) on stdin, starts the submission's kernel in a sandbox
(sandbox.py), runs the learner's cells there and the instructor's checks itself (checker.py), and writes the
`NotebookRun` as JSON to the pipe FD. That pipe, the runner's memory and its files are out of the kernel's reach
(other namespaces, and another uid when the grader runs as root), and the report carries no secret: the runner
decided every outcome itself.

While the notebook runs, a watchdog stops it when the sandbox's processes and the files on its tmpfs mounts together
hold more than `Limits.memory_bytes`, or when the kernel has sent more than `Limits.output_bytes` (its printed output, its
messages, its raw stdout/stderr) or written more than `Limits.scratch_bytes` into its runtime folder. Every
message from the kernel is read through sockets that drop one larger than `MAX_MESSAGE_BYTES` (replies) or
`IOPUB_MESSAGE_BYTES` (printed output, of which at most `IOPUB_QUEUED_MESSAGES` wait to be read).
"""

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

from coursekit import course
from coursekit.grading import checker, wire
from coursekit.grading.outcome import Ending, NotebookRun, Outcome, Status, cell_outcome
from coursekit.grading.plan import ContextCell, Step
from coursekit.grading.sandbox import ENVIRONMENT_PASSED, Limits, Sandbox, package_path

MAX_MESSAGE_BYTES = 2 * wire.MAX_BYTES  # a base64 answer of the agent fits
IOPUB_MESSAGE_BYTES = 4 * 2**20  # one message of printed output; a larger one is dropped
IOPUB_QUEUED_MESSAGES = 32
WATCH_SECONDS = 0.2
IDLE_GRACE_SECONDS = 2.0  # after a reply, how long to wait for the kernel's last output of that cell


def main():
    report_fd = int(sys.argv[1])
    try:
        job = json.loads(sys.stdin.read())
        run = Runner(job).run()
    except Exception as error:  # noqa: BLE001 (reported, never a crash without a report)
        run = NotebookRun(ending=Ending.GRADER_FAULT, detail=f"the runner failed: {type(error).__name__}: {error}")
    data = json.dumps(run.to_json()).encode()
    with os.fdopen(report_fd, "wb") as report:
        report.write(data)


def kernel_environment(sandbox, fast, lang):
    """The kernel's whole environment: a few settings of ours, ENVIRONMENT_PASSED from the grader's, the course's
    own (its `kernel_environment` hook), and its fast-mode and language variables."""
    home, tmp = str(sandbox.home), str(sandbox.tmp)
    environment = {"HOME": home, "TMPDIR": tmp, "USER": "learner", "LANG": "C.UTF-8",
                   "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
                   "PYTHONPATH": package_path(), "PYTHONDONTWRITEBYTECODE": "1",
                   "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{home}/.config/matplotlib", "IPYTHONDIR": f"{home}/.ipython",
                   "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    environment.update({name: os.environ[name] for name in ENVIRONMENT_PASSED if name in os.environ})
    environment.update(course.hook("kernel_environment", dict)())
    if fast:
        environment[course.setting("fast_variable")] = "1"
    if lang:
        environment[course.setting("language_variable")] = lang
    return environment


class Runner:
    def __init__(self, job):
        self.steps = [Step(**step) for step in job["steps"]]
        self.context = [ContextCell(**{**cell, "learner_names": tuple(cell["learner_names"])})
                        for cell in job["context"]]
        self.deadline = time.monotonic() + (job["deadline"] - time.time())
        self.fast, self.lang, self.unsafe = job["fast"], job.get("lang"), job["unsafe"]
        self.limits = Limits(**job["limits"])
        self.read_only_paths = job["read_only_paths"]
        self.cpu_seconds = job["cpu_seconds"]

    def run(self):
        run = NotebookRun()
        sandbox = Sandbox(self.limits, unsafe=self.unsafe, read_only_paths=self.read_only_paths,
                          cpu_seconds=self.cpu_seconds)
        if self.unsafe:  # no PID namespace ends what an unsafe kernel starts: this runner adopts and kills it
            sandbox.adopt_orphans()
        os.chdir(_private_folder(sandbox.root))  # the instructor's cells run here, never in the kernel's folders
        kernel = None
        try:
            kernel = Kernel(sandbox, kernel_environment(sandbox, self.fast, self.lang), self.deadline, self.limits)
            kernel.install_agent()
            check = checker.Checker(self.context, checker.Channel(kernel.ask), self.deadline)
            for number, step in enumerate(self.steps):
                run.started.append(number)
                run.outcomes[number] = kernel.run_cell(step) if step.kind == "learner" else check.run(step)
        except checker.KernelGone as gone:
            run.ending, run.detail = gone.ending, gone.detail
        finally:
            if kernel is not None:
                kernel.close()
            sandbox.close()
        return run


def _private_folder(root):
    folder = Path(root) / "checker"
    folder.mkdir(mode=0o700)
    return folder


class Kernel:
    """An IPython kernel in the sandbox, driven over ZeroMQ sockets in the sandbox's runtime folder."""

    def __init__(self, sandbox, environment, deadline, limits):
        import zmq
        from jupyter_client import BlockingKernelClient
        from jupyter_client.connect import write_connection_file

        self.sandbox, self.deadline, self.limits = sandbox, deadline, limits
        self.output_bytes, self.stopped, self.tail = 0, None, b""
        connection_file, _ = write_connection_file(
            str(sandbox.runtime / "kernel.json"), transport="ipc", ip=str(sandbox.runtime / "socket"),
            key=secrets.token_hex(32).encode())
        sandbox.give(connection_file)  # the kernel makes its `socket-N` files beside it
        self.process = sandbox.popen([sys.executable, "-m", "ipykernel_launcher", "-f", connection_file,
                                      "--HistoryManager.enabled=False"],
                                     environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._drain, daemon=True).start()
        self.context = zmq.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, IOPUB_MESSAGE_BYTES)  # printed output: small messages, few queued
        self.context.setsockopt(zmq.RCVHWM, IOPUB_QUEUED_MESSAGES)
        self.client = BlockingKernelClient(context=self.context)
        self.client.load_connection_file(connection_file)
        self.client.iopub_channel  # noqa: B018 (the property makes the socket now, under the limits above)
        self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)  # replies, which carry the checker's values
        self.context.setsockopt(zmq.RCVHWM, 1000)
        self.client.start_channels()
        self._watching = True
        threading.Thread(target=self._watch, daemon=True).start()
        self._wait_until_ready()

    def _wait_until_ready(self):
        while True:
            try:
                self._raise_if_gone()
            except checker.KernelGone as gone:
                if gone.ending is not Ending.KERNEL_DIED:
                    raise
                # no learner code has run yet: the sandbox or the Python environment is at fault
                output = self.tail.decode("utf-8", "replace").strip()[-600:]
                raise checker.KernelGone(Ending.GRADER_FAULT, f"the kernel did not start in the sandbox: "
                                                              f"{output or 'it printed nothing'}") from None
            self.client.kernel_info()
            try:
                while True:
                    message = self.client.get_shell_msg(timeout=0.5)
                    if message["msg_type"] == "kernel_info_reply":
                        return
            except queue.Empty:
                continue

    def _drain(self):
        """Reads the kernel's own stdout and stderr, keeping a short tail and counting the bytes."""
        for chunk in iter(lambda: self.process.stdout.read1(65536), b""):
            self.output_bytes += len(chunk)
            self.tail = (self.tail + chunk)[-2000:]

    def _watch(self):
        limits, sandbox = self.limits, self.sandbox
        while self._watching:
            resident, _ = sandbox.usage()
            in_files = sandbox.scratch_usage()  # its tmpfs mounts are memory too
            if resident + in_files > limits.memory_bytes:
                self._stop(f"it used more than {limits.memory_bytes / 2**30:g} GB of memory ({resident / 2**30:.2f} "
                           f"GB in its processes, {in_files / 2**30:.2f} GB in files in /tmp, /dev/shm and its home)")
            elif self.output_bytes > limits.output_bytes:
                self._stop(f"it printed or sent more than {limits.output_bytes / 2**20:g} MB")
            elif sandbox.runtime_bytes() > limits.scratch_bytes:
                self._stop(f"it wrote more than {limits.scratch_bytes / 2**20:g} MB of files")
            time.sleep(WATCH_SECONDS)

    def _stop(self, detail):
        if self.stopped is None:
            self.stopped = detail
        self.sandbox.stop()

    def _raise_if_gone(self):
        if self.stopped is not None:
            raise checker.KernelGone(Ending.LIMIT, self.stopped)
        if self.process.poll() is not None:
            time.sleep(WATCH_SECONDS * 2)  # the watchdog may have stopped it: say so rather than "died"
            if self.stopped is not None:
                raise checker.KernelGone(Ending.LIMIT, self.stopped)
            raise checker.KernelGone(Ending.KERNEL_DIED)
        if time.monotonic() > self.deadline:
            raise checker.KernelGone(Ending.TIMED_OUT)

    def execute(self, source, silent=False, user_expressions=None):
        """Runs code in the kernel; its execute_reply's content. Raises KernelGone."""
        message_id = self.client.execute(source, silent=silent, store_history=not silent, allow_stdin=False,
                                         stop_on_error=False, user_expressions=user_expressions or {})
        reply, idle, replied_at = None, False, None
        while reply is None or not idle:
            self._raise_if_gone()
            if replied_at is not None and time.monotonic() - replied_at > IDLE_GRACE_SECONDS:
                break
            try:
                message = self.client.get_iopub_msg(timeout=0.05)
                self.output_bytes += _size(message.get("content"))
                if message["parent_header"].get("msg_id") == message_id and message["msg_type"] == "status" \
                        and message["content"].get("execution_state") == "idle":
                    idle = True
            except queue.Empty:
                pass
            if reply is None:
                try:
                    message = self.client.get_shell_msg(timeout=0.005)
                    if message["parent_header"].get("msg_id") == message_id:
                        reply, replied_at = message["content"], time.monotonic()
                except queue.Empty:
                    pass
        return reply

    def ask(self, code, user_expressions):
        """The checker's channel: a silent request to the kernel's agent."""
        return self.execute(code, silent=True, user_expressions=user_expressions)

    def install_agent(self):
        reply = self.execute(checker.install_code(), silent=True)
        if reply.get("status") != "ok":
            raise RuntimeError(f"could not start the kernel's end of the grading channel: {reply.get('ename')}: "
                               f"{reply.get('evalue')}")

    def run_cell(self, step):
        reply = self.execute(step.source)
        if reply.get("status") == "ok":
            return Outcome(Status.PASSED)
        return cell_outcome(str(reply.get("ename") or "Error")[:100], str(reply.get("evalue") or "")[:5000],
                            step.name)

    def close(self):
        self._watching = False
        try:
            self.client.stop_channels()
        except Exception:  # noqa: BLE001 (the sockets may be gone already)
            pass
        self.sandbox.stop()
        self.context.destroy(linger=0)


def _size(content):
    """Bytes of a message's content, roughly (what the kernel printed or displayed)."""
    if not isinstance(content, dict):
        return 0
    size = len(str(content.get("text", "")))
    for value in (content.get("data") or {}).values():
        size += len(str(value))
    size += sum(len(str(line)) for line in content.get("traceback") or [])
    return size


if __name__ == "__main__":
    main()
