"""BERT's forward pass in numpy, the reference the chapters and the locator compare with: the course's name for
`bertlib.model.reference`, which lives in the library so that the library's tests compare with it too. Read it
there (`reference.bert`, then the pieces it calls)."""

from bertlib.model.reference import *  # noqa: F403
from bertlib.model.reference import __all__  # noqa: F401
