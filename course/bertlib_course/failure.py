"""The exception a failed check raises, shared by the check helpers (`checks`) and the locator (`locate`).

It lives in its own module so that neither of those imports the other for it.
"""


class CheckFailed(AssertionError):
    """Raised by a check whose value is not the expected one; its message has Expected / Got / Hint lines."""
