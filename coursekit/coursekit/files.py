"""The kit's files are written so that a crash never leaves half of one: write beside the target, then rename.

The library a course teaches has its own (bertlib.io.files); the kit is generic and imports no library, so it keeps
these few lines itself.
"""

import os
import tempfile
from pathlib import Path


def write_text_atomically(path, text):
    """Write UTF-8 text with Unix line endings to a temporary file beside `path`, flush it to disk, then rename it
    onto `path`; returns `path`. On any error the temporary file is removed and `path` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix or ".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes the file private; give it the usual mode
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
