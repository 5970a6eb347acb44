"""The exception a failed check raises, shared by the check helpers (`checks`) and the locator (`locate`).

It lives in its own module so that neither of those imports the other for it.
"""


class CheckFailed(AssertionError):
    """Raised by a check whose value is not the expected one; its message has Expected / Got / Hint lines.

    In a notebook the learner sees that message alone, not a traceback through the check helpers: IPython shows
    what an exception's `_render_traceback_()` returns in place of the traceback. The error is still an error of the
    cell (nbval and the grader see `CheckFailed` with this message), and `traceback.format_exception` still gives
    every frame, for whoever debugs a check.
    """

    def _render_traceback_(self):
        """The lines IPython (JupyterLab, Colab, nbval's kernel) shows for this error: the message, in red."""
        return [f"\x1b[0;31m{line}\x1b[0m" if line.startswith("✘") else line for line in str(self).splitlines()]
