"""Files are written so that a crash never leaves half of one: write beside the target, then rename.

Readers (a resumed run, a grader, `load_hf_checkpoint`) then see either the old file or the new one.
No heavy imports here: the grading and exercise commands use it too.
"""

import contextlib
import datetime
import os
import socket
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt


def atomic_write(path, write):
    """Call `write(temporary_path)`, flush it to disk, then rename it onto `path`; returns `path`.

    The temporary file sits in `path`'s folder (a rename is atomic only within one file system) and keeps
    `path`'s suffix, since Keras and numpy choose the format by it. On any error it is removed and `path` is
    left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix or ".tmp")
    os.close(handle)
    try:
        write(temporary)
        with open(temporary, "rb+") as file:
            os.fsync(file.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes the file private; give it the usual mode
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path, text):
    """`atomic_write` for UTF-8 text with Unix line endings."""
    return atomic_write(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8", newline="\n"))


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


def check_writable_dir(folder, flag, consequence=""):
    """Create `folder` if needed and make sure a file can be written in it, before any long work starts.

    Raises a ValueError naming `flag` (the option that chose the folder) when it is a file or cannot be
    written; `consequence` is appended to the message (e.g. "Nothing was trained.").
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag} {folder} is a file; expected a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".bertlib-write-check-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise ValueError(f"{flag} {folder} cannot be written ({error.strerror or error}); choose a folder you "
                         f"can write to.{' ' + consequence if consequence else ''}") from error
    return folder



class FolderInUse(RuntimeError):
    """Another process holds the folder's lock (`exclusive_lock`)."""


LOCK_NAME = ".bertlib.lock"


@contextlib.contextmanager
def exclusive_lock(folder, flag, command):
    """Hold `folder`'s lock for the block, or raise `FolderInUse` at once when another run holds it.

    The lock is the operating system's (`flock` on Linux and macOS, `msvcrt.locking` on Windows) on the file
    `.bertlib.lock`, so it is released when the holder ends, also when it is killed; the file says who holds
    it (process id, machine, start time), for the message of the run that is refused.

    Args:
        folder: the folder (it must exist).
        flag: str, the option that named it ("--checkpoint-dir"), for the message.
        command: str, what holds it ("bertlib pretrain").
    """
    path = Path(folder) / LOCK_NAME
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held until the block ends)
    try:
        try:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FolderInUse(
                f"{flag} {folder} is in use by another run ({holder}); two runs in one folder would overwrite "
                f"each other's checkpoints and results. Nothing was done. Wait until that run ends (or stop "
                f"it), or choose another {flag}.") from None
        handle.seek(0)
        handle.truncate()
        started = datetime.datetime.now().isoformat(timespec="seconds")
        handle.write(f"{command}, process {os.getpid()} on {socket.gethostname()}, started {started}\n")
        handle.flush()
        yield path
    finally:
        handle.close()  # closing releases the lock
