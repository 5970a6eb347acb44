"""bertlib's files: written so that a crash never leaves half of one (write beside the target, then rename),
folders held by one run at a time, and the one cache folder.

Readers (a resumed run, `load_hf_checkpoint`) then see either the old file or the new one. No heavy imports here.
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


def atomic_write(path, write, temporary_suffix=None):
    """Call `write(temporary_path)`, flush it to disk, then rename it onto `path`; returns `path`.

    The temporary file sits in `path`'s folder (a rename is atomic only within one file system) and keeps
    `path`'s suffix, since Keras and numpy choose the format by it; `temporary_suffix` replaces it where readers
    find files by their suffix (TFRecord shards by `*.tfrecord`), so that a killed writer leaves nothing they
    read. On any error it is removed and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.",
                                         suffix=temporary_suffix or path.suffix or ".tmp")
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


def check_output_dir(folder, flag, *, overwrite=False, earlier="*", consequence=""):
    """`check_writable_dir`, and `folder` must hold no earlier outputs (its entries matching the glob `earlier`)
    unless `overwrite`: a run refuses to mix its outputs with another's before any long work starts.

    Returns the folder as a Path; a ValueError naming `flag` otherwise, with `consequence` appended.
    """
    folder = Path(folder)
    present = sorted(entry.name for entry in folder.glob(earlier)) if folder.is_dir() and not overwrite else []
    if present:
        listing = f"{present[:5]}{' ...' if len(present) > 5 else ''}"
        raise ValueError(f"{flag} {folder} is not empty: it already holds {listing}; bertlib does not overwrite a "
                         "run's outputs. Choose a new folder, or pass --overwrite (overwrite=True) to replace them."
                         f"{' ' + consequence if consequence else ''}")
    return check_writable_dir(folder, flag, consequence)


class FolderInUse(RuntimeError):
    """Another process holds the folder's lock (`exclusive_lock`)."""


LOCK_NAME = ".bertlib.lock"


@contextlib.contextmanager
def exclusive_lock(folder, flag, command, run=None):
    """Hold `folder`'s lock for the block, or raise `FolderInUse` at once when another run holds it.

    The lock is the operating system's (`flock` on Linux and macOS, `msvcrt.locking` on Windows) on the file
    `.bertlib.lock`, so it is released when the holder ends, also when it is killed; the file says who holds
    it (process id, machine, start time, and `run`), for the message of the run that is refused.

    A run of several processes (`bertlib.train.multihost`) is held by its process 0 alone, with `run` naming the
    run; the other processes read that name back (`lock_holder`) to know they share the folder with it.

    Args:
        folder: the folder (it must exist).
        flag: str, the option that named it ("--checkpoint-dir"), for the message.
        command: str, what holds it ("bertlib pretrain").
        run: str or None, the run the lock is held for, written into the file.
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
        handle.write(f"{command}, process {os.getpid()} on {socket.gethostname()}, started {started}"
                     f"{f', for {run}' if run else ''}\n")
        handle.flush()
        os.fsync(handle.fileno())  # on a shared (network) folder, the other processes of the run read it next
        yield path
    finally:
        handle.close()  # closing releases the lock


def lock_holder(folder):
    """What `folder`'s lock file says about its holder ("" when there is none): see `exclusive_lock`."""
    try:
        return (Path(folder) / LOCK_NAME).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def cache_home():
    """Where bertlib keeps what it fetches and makes (datasets, the course's tiny models, JAX's compiled programs):
    `$BERTLIB_CACHE`, else the platform's user cache folder for bertlib (platformdirs' answer, which pooch uses;
    `~/.cache/bertlib` on Linux and where platformdirs is not installed)."""
    if os.environ.get("BERTLIB_CACHE"):
        return Path(os.environ["BERTLIB_CACHE"])
    try:
        import platformdirs
    except ImportError:
        return Path.home() / ".cache" / "bertlib"
    return Path(platformdirs.user_cache_dir("bertlib"))
