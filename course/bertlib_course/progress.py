"""Progress with an estimate of the time left, for every cell that runs 20 seconds or more: no blind wait.

    for seed in course.progress(SEEDS, description="seeds"):
        ...
    model.fit(train, epochs=3, verbose=0, callbacks=[course.progress_callback()])

One display per loop, updated in place (IPython's `display(..., display_id=True)` and `handle.update`), with a
text/plain form, e.g. `seeds 7/21 [######..............] 33% 2:10 elapsed, about 4:20 left`, and a small HTML
bar. A display id is no widget, so it works alike in JupyterLab, on Colab and in a stored notebook: nbclient
(and Jupyter) apply each update to the output of the same display id, and the stored output is the final
state (`seeds 21/21 [####################] 100% 6:30 elapsed`). The display is redrawn at most every
`UPDATE_INTERVAL_S` seconds of the clock, and always at the end.

The time left is elapsed / done * (total - done), "estimating the time left" before the first item is done.
Its words come from the course's catalogue (`messages.translate`): the Chinese edition reads
`已用 2:10，约剩 4:20`. A description listed there (as a figure string) is translated too.

Outside a notebook kernel (plain `python`, a terminal IPython) nothing is shown while the loop runs, and the
final state is written as one line on stderr when it ends: a script's stdout stays its own, and its log still
says how long the loop took.
"""

import functools
import html
import math
import operator
import sys
import time

from bertlib_course import messages

UPDATE_INTERVAL_S = 0.5  # at most about two redraws a second: a fast loop does not flood the frontend
BAR_WIDTH = 20


def progress(iterable, total=None, description=""):
    """Yields the items of `iterable` while one display shows how many are done and the time left.

    Args:
        iterable: any iterable; its items are yielded unchanged.
        total: int or None, the number of items (default `len(iterable)`; None when it has no length: then the
            display counts items and time without a bar or an estimate).
        description: str, the words in front of the count (e.g. "seeds", "grid").

    Example:
        for seed in course.progress(SEEDS, description="seeds"):
            results.append(train_one(seed))

    An item counts as done when the loop asks for the next one. A loop left early (`break`, an error) keeps
    the state it reached as its final display.
    """
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    bar = Progress(total, description)
    bar.start()
    try:
        for done, item in enumerate(iterable, start=1):
            yield item
            bar.advance(done)
    finally:
        bar.finish()


def progress_callback(total_steps=None, description="training"):
    """A Keras callback that shows the train batches of `model.fit` done and the time left (pass `verbose=0`).

    Args:
        total_steps: int or None, the train batches of the whole fit (default: steps per epoch x epochs, as
            `fit` knows them; None when the data has no known length: then it counts without an estimate).
        description: str, the words in front of the count, default "training".

    Example:
        model.fit(train, epochs=3, verbose=0, callbacks=[course.progress_callback()])

    The batches count across epochs; validation is not counted. Only `keras.callbacks.Callback` is used, so
    it runs on every backend. Each `fit` it is given to starts a display of its own.
    """
    return _callback_class()(total_steps=total_steps, description=description)


class Progress:
    """One progress display: `start()`, `advance(done)` as items finish, `finish()` once at the end.

    Args:
        total: int or None, the number of items (None: unknown).
        description: str, the words in front of the count.
        clock: a function giving seconds (default `time.monotonic`).
        output: what shows the states, an object with `show(plain, html, final)` (default: a display in a
            notebook kernel, else one final line on stderr).
    """

    def __init__(self, total=None, description="", clock=time.monotonic, output=None):
        self.total = _checked_total(total, description)
        self.description = description
        self.clock = clock
        self.output = output if output is not None else _default_output()
        self.done = 0
        self.started = self.shown_at = None
        self.finished = False

    def start(self):
        self.started = self.shown_at = self.clock()
        self._show(final=False)

    def advance(self, done):
        """`done` items are finished; redraws when `UPDATE_INTERVAL_S` has passed since the last redraw."""
        self.done = done
        now = self.clock()
        if now - self.shown_at >= UPDATE_INTERVAL_S:
            self.shown_at = now
            self._show(final=False)

    def finish(self):
        """Shows the final state (once; a second call changes nothing)."""
        if not self.finished:
            self.finished = True
            self._show(final=True)

    def _show(self, final):
        elapsed = self.clock() - self.started
        self.output.show(*render(self.description, self.done, self.total, elapsed, final), final)


def _checked_total(total, description):
    """`total` as an int (a numpy integer too), or None; a ValueError naming what is wrong otherwise."""
    if not isinstance(description, str):
        raise ValueError(f"progress: description={description!r} is not text; expected a str")
    if total is None:
        return None
    try:
        count = operator.index(total) if not isinstance(total, bool) else -1
    except TypeError:
        count = -1
    if count < 0:
        raise ValueError(f"progress: total={total!r} is not a count; expected an int >= 0 or None")
    return count


def render(description, done, total, elapsed, final=False):
    """`(text/plain, text/html)` of one state: `done` of `total` items (None: unknown) after `elapsed` seconds.

    The time left, elapsed / done * (total - done), is shown while the loop runs; the final state shows the
    time it took.
    """
    description = messages.translate(description) if description else ""
    times = _times(done, total, elapsed, final)
    if total is None:
        count = f"{done}"
        plain = " ".join(part for part in (description, count, times) if part)
        return plain, f'<span style="font-family:monospace">{html.escape(plain)}</span>'
    share = min(done / total, 1.0) if total else 1.0
    percent = math.floor(100 * share)
    filled = math.floor(BAR_WIDTH * share)
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    count = f"{done}/{total}"
    plain = " ".join(part for part in (description, count, f"[{bar}]", f"{percent}%", times) if part)
    text = " ".join(part for part in (description, count, f"{percent}%", times) if part)
    markup = (f'<progress value="{min(done, total)}" max="{max(total, 1)}" style="width:16em"></progress> '
              f'<span style="font-family:monospace">{html.escape(text)}</span>')
    return plain, markup


def _times(done, total, elapsed, final):
    """The time part in the learner's language: the catalogue's template, looked up, then filled
    (`messages.formatted`)."""
    if final or total is None:
        return messages.formatted("{elapsed} elapsed", elapsed=clock_time(elapsed))
    if done == 0:
        return messages.chapter_text("estimating the time left")
    left = elapsed / done * max(total - done, 0)
    return messages.formatted("{elapsed} elapsed, about {left} left", elapsed=clock_time(elapsed),
                              left=clock_time(left))


def clock_time(seconds):
    """`seconds` as M:SS, or H:MM:SS from an hour on (rounded down to the second)."""
    minutes, seconds = divmod(int(max(seconds, 0)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class _Display:
    """One display in the running notebook, updated in place through its display id."""

    def __init__(self):
        self.handle = None

    def show(self, plain, markup, final):
        from IPython.display import display

        bundle = {"text/plain": plain, "text/html": markup}
        if self.handle is None:
            self.handle = display(bundle, raw=True, display_id=True)
        else:
            self.handle.update(bundle, raw=True)


class _FinalLine:
    """Outside a notebook kernel: nothing while the loop runs, the final state as one line on stderr."""

    def show(self, plain, markup, final):
        if final:
            print(plain, file=sys.stderr, flush=True)


def _default_output():
    """A notebook display when a kernel runs this (JupyterLab, Colab, nbclient), else the final line."""
    ipython = sys.modules.get("IPython")  # never imported here: plain python has no display to update
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return _Display() if getattr(shell, "kernel", None) is not None else _FinalLine()


@functools.cache
def _callback_class():
    """`ProgressBar`, made at the first call: importing this module imports no Keras (`course.setup` first)."""
    import keras

    class ProgressBar(keras.callbacks.Callback):
        """Shows the train batches of `fit` done, across epochs, and the time left (`progress_callback`)."""

        def __init__(self, total_steps=None, description="training"):
            super().__init__()
            # a bad argument is refused here, not once fit has started
            self.total_steps = _checked_total(total_steps, description)
            self.description = description
            self.bar = None
            self.done = self.epoch_start = 0

        def on_train_begin(self, logs=None):
            total = self.total_steps
            steps, epochs = self.params.get("steps"), self.params.get("epochs")
            if total is None and steps and epochs:
                total = steps * epochs
            self.done = self.epoch_start = 0
            self.bar = Progress(total, self.description)
            self.bar.start()

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_start = self.done

        def on_train_batch_end(self, batch, logs=None):
            # `batch` is the last step's index in the epoch (with steps_per_execution > 1 it jumps by that much)
            self.done = self.epoch_start + batch + 1
            self.bar.advance(self.done)

        def on_train_end(self, logs=None):
            self.bar.finish()

    ProgressBar.__module__ = __name__
    ProgressBar.__qualname__ = "ProgressBar"
    return ProgressBar


def __getattr__(name):
    """`ProgressBar`, the callback's class (for `isinstance`), made when first asked for."""
    if name == "ProgressBar":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
