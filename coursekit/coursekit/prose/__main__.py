"""`python -m coursekit.prose notebooks/0*.ipynb`: exit status 1 when there are findings."""

from coursekit.prose.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
