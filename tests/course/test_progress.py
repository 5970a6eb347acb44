"""`course.progress` and `course.progress_callback`: the throttle, the time left, the final state a stored notebook
keeps, the Chinese words, and `model.fit` on every backend."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bertlib_course.progress import UPDATE_INTERVAL_S, Progress, clock_time, progress, render

REPO = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Recorder:
    """Stands for the notebook display: keeps every state shown."""

    def __init__(self):
        self.shown = []

    def show(self, plain, markup, final):
        self.shown.append((plain, final))


def test_the_display_is_redrawn_at_most_every_half_second_and_always_at_the_end():
    clock, output = FakeClock(), Recorder()
    bar = Progress(1024, "grid", clock=clock, output=output)
    bar.start()
    for done in range(1, 1025):  # 1024 items of 1/64 s (exact in binary): 16 s
        clock.now += 1 / 64
        bar.advance(done)
    bar.finish()
    bar.finish()  # a second call shows nothing more
    assert UPDATE_INTERVAL_S == 0.5
    # the start, one redraw per half second (every 32nd item: 32, the last at the 1024th item), the end
    assert len(output.shown) == 1 + 32 + 1
    assert [final for _, final in output.shown] == [False] * 33 + [True]
    assert output.shown[0][0] == "grid 0/1024 [....................] 0% estimating the time left"
    assert output.shown[1][0] == "grid 32/1024 [....................] 3% 0:00 elapsed, about 0:15 left"  # 0.5 / 32 * 992 s
    assert output.shown[-1][0] == "grid 1024/1024 [####################] 100% 0:16 elapsed"


def test_a_fast_loop_shows_only_its_start_and_its_end():
    clock, output = FakeClock(), Recorder()
    bar = Progress(50, clock=clock, output=output)
    bar.start()
    for done in range(1, 51):
        clock.now += 0.001
        bar.advance(done)
    bar.finish()
    assert [plain for plain, _ in output.shown] == ["0/50 [....................] 0% estimating the time left",
                                                    "50/50 [####################] 100% 0:00 elapsed"]


def test_the_time_left_is_elapsed_over_done_times_what_remains():
    # 7 of 21 after 130 s: 130 / 7 * 14 = 260 s = 4:20 left
    plain, markup = render("grid", 7, 21, 130.0)
    assert plain == "grid 7/21 [######..............] 33% 2:10 elapsed, about 4:20 left"
    assert '<progress value="7" max="21"' in markup and "2:10 elapsed, about 4:20 left" in markup
    assert render("", 1, 3, 5 * 3600 + 1.9)[0] == "1/3 [######..............] 33% 5:00:01 elapsed, about 10:00:03 left"
    assert render("x", 0, 3, 12.0)[0] == "x 0/3 [....................] 0% estimating the time left"
    # 99.6% is not yet 100%; an unknown total counts without a bar or an estimate
    assert render("", 996, 1000, 10.0)[0].startswith("996/1000 [###################.] 99% ")
    assert render("steps", 42, None, 61.0)[0] == "steps 42 1:01 elapsed"
    assert render("", 0, 0, 0.0, final=True)[0] == "0/0 [####################] 100% 0:00 elapsed"
    assert [clock_time(s) for s in (0, 59.99, 60, 3599, 3600, -1)] == ["0:00", "0:59", "1:00", "59:59",
                                                                         "1:00:00", "0:00"]


def test_the_chinese_edition_reads_chinese_words(monkeypatch):
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    assert render("grid", 7, 21, 130.0)[0] == "grid 7/21 [######..............] 33% 已用 2:10，约剩 4:20"
    assert render("", 0, 21, 1.0)[0].endswith(" 0% 剩余时间估算中")
    assert render("training", 21, 21, 130.0, final=True)[0] == "训练 21/21 [####################] 100% 已用 2:10"


def test_the_wrapper_yields_every_item_and_keeps_where_an_early_exit_left_it(monkeypatch):
    module = sys.modules["bertlib_course.progress"]  # `bertlib_course.progress` names the function
    outputs = []
    monkeypatch.setattr(module, "_default_output", lambda: outputs.append(Recorder()) or outputs[-1])
    assert list(progress(iter("abc"), total=3, description="letters")) == ["a", "b", "c"]
    for item in progress(["a", "b", "c", "d", "e"], description="letters"):  # the total from len()
        if item == "d":
            break
    finished = [[shown for shown in output.shown if shown[1]] for output in outputs]
    assert finished == [[("letters 3/3 [####################] 100% 0:00 elapsed", True)],
                        [("letters 3/5 [############........] 60% 0:00 elapsed", True)]]


def test_bad_arguments_are_refused_with_the_value():
    with pytest.raises(ValueError, match=r"total=-1 is not a count; expected an int >= 0 or None"):
        next(progress([1], total=-1))
    with pytest.raises(ValueError, match=r"total='3' is not a count"):
        Progress("3", output=Recorder())
    with pytest.raises(ValueError, match=r"description=3 is not text; expected a str"):
        next(progress([1], description=3))
    import numpy as np

    assert Progress(np.int64(3), output=Recorder()).total == 3


def _run(script, backend="tensorflow"):
    environment = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    environment.pop("BERTLIB_LANG", None)
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                               env=environment, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def test_plain_python_prints_one_final_line_on_stderr_and_nothing_on_stdout():
    completed = _run("""
        import bertlib_course as course
        total = sum(course.progress(range(4), description="sum"))
        print(total)
    """)
    assert completed.stdout == "6\n"
    assert completed.stderr.splitlines()[-1] == "sum 4/4 [####################] 100% 0:00 elapsed"


FIT = """
    import json, numpy as np, keras
    import bertlib_course as course
    from bertlib_course.progress import ProgressBar
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    callback = course.progress_callback(description="fit")
    x, y = np.zeros((40, 3), "float32"), np.zeros((40, 1), "float32")
    model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[callback])
    first = (callback.bar.done, callback.bar.total)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[callback])
    print(json.dumps({"first": first, "second": (callback.bar.done, callback.bar.total),
                      "is_callback": isinstance(callback, ProgressBar) and isinstance(callback, keras.callbacks.Callback)}))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_the_callback_counts_train_batches_across_epochs_on_every_backend(backend):
    pytest.importorskip(backend)
    completed = _run(FIT, backend)
    result = json.loads(completed.stdout.splitlines()[-1])
    # 40 examples in batches of 8: 5 steps an epoch; each fit starts its own count
    assert result == {"first": [15, 15], "second": [10, 10], "is_callback": True}
    finals = completed.stderr.splitlines()[-2:]
    assert finals[0].startswith("fit 15/15 [####################] 100% ") and finals[0].endswith(" elapsed")
    assert finals[1].startswith("fit 10/10 [####################] 100% ")


NOTEBOOK_CELL = """
import time
import bertlib_course as course
for step in course.progress(range(6), description="toy"):
    time.sleep(0.25)
"""


def test_a_stored_notebook_keeps_one_display_in_its_final_state():
    """nbclient applies each update_display_data to the output of the same display id: the cell stores one output,
    the 100% state, though the kernel showed the start and redrew it on the way."""
    import nbformat
    from nbclient import NotebookClient

    class Watching(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            if msg["msg_type"] in ("display_data", "update_display_data"):
                messages.append((msg["msg_type"], msg["content"]["data"]["text/plain"]))
            return super().process_message(msg, cell, cell_index)

    messages = []
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(NOTEBOOK_CELL)]
    environment = {key: value for key, value in os.environ.items() if key != "BERTLIB_LANG"}
    Watching(notebook, timeout=300, kernel_name="python3").execute(
        env={**environment, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(REPO)})
    outputs = notebook.cells[0].outputs
    assert len(outputs) == 1 and outputs[0].output_type == "display_data", outputs
    final = outputs[0].data["text/plain"]
    assert re.fullmatch(r"toy 6/6 \[#{20}\] 100% 0:0[1-3] elapsed", final), final
    assert "<progress" in outputs[0].data["text/html"]
    # what the kernel sent: one display, then updates of it (a redraw on the way, the final state last)
    kinds = [kind for kind, _ in messages]
    assert kinds[0] == "display_data" and kinds.count("display_data") == 1
    assert kinds.count("update_display_data") >= 2
    assert messages[0][1] == "toy 0/6 [....................] 0% estimating the time left"
    assert messages[-1][1] == final
    assert any("about" in text and "left" in text for _, text in messages[1:-1])
