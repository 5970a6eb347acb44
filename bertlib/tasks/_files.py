"""File checks shared by the task loaders."""

from pathlib import Path


def existing_file(path, layout):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; expected {layout}.")
    return path
