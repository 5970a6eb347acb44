"""Moved to `bertlib.course.explore` (the course tooling lives apart from the library); this name works too."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("bertlib.course.explore")
