"""The prose-number check's command line: `python -m coursekit.prose notebooks/0*.ipynb [--english DIR]`."""

import argparse

from coursekit.prose.check import check_notebooks, format_findings


def main(argv=None):
    """`python -m coursekit.prose notebooks/0*.ipynb`; exit status 1 when there are findings."""
    parser = argparse.ArgumentParser(description="Every number the prose quotes agrees with the output it "
                                                 "describes (the rule: `coursekit.prose`).")
    parser.add_argument("notebooks", nargs="+", help="stored notebooks (.ipynb) to check")
    parser.add_argument("--english", help="folder of the English originals (a Chinese edition inherits their "
                                          "declarations)")
    args = parser.parse_args(argv)
    findings = check_notebooks(args.notebooks, english_folder=args.english)
    print(format_findings(findings))
    return 1 if findings else 0
