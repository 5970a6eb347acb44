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
    return _write_atomically(path, text)


def _write_atomically(path, data):
    """`write_text_atomically` for `data`, str (UTF-8, Unix line endings) or bytes (as they are)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix or ".tmp")
    try:
        with (os.fdopen(handle, "wb") if isinstance(data, bytes)
              else os.fdopen(handle, "w", encoding="utf-8", newline="\n")) as file:
            file.write(data)
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


def write_changed(root, files, stale_folders=(), stale_pattern="*.ipynb"):
    """Make `root` hold `files`, touching only what differs; returns the paths written, then those removed.

    Args:
        root: Path, the folder the names of `files` and `stale_folders` are relative to.
        files: dict, `{relative path ("exercises/zh/03_x.ipynb"): content}`, content str (compared with the file
            read as text) or bytes (compared byte for byte). A file whose content differs, or that is missing,
            is written atomically (`write_text_atomically`); one that is the same is left as it is, mtime and all.
        stale_folders: relative folders (in this order) whose files matching `stale_pattern` are generated ones:
            each that `files` does not name is removed.
        stale_pattern: str, the glob of the generated files in `stale_folders`.
    """
    root = Path(root)
    changed = []
    for relative, content in files.items():
        path = root / relative
        if isinstance(content, bytes):
            same = path.is_file() and path.read_bytes() == content
        else:
            same = path.is_file() and path.read_text(encoding="utf-8") == content
        if not same:
            _write_atomically(path, content)
            changed.append(path)
    names = {Path(relative).as_posix() for relative in files}
    for folder in stale_folders:
        for path in sorted((root / folder).glob(stale_pattern)):
            if path.relative_to(root).as_posix() not in names:
                path.unlink()
                changed.append(path)
    return changed


def print_changed(paths):
    """Says what `write_changed` did, one line a file: "wrote PATH", or "removed PATH" for one that is gone."""
    for path in paths:
        print(f"{'wrote' if Path(path).exists() else 'removed'} {path}")
