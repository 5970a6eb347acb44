"""Numbers as prose writes them, read with their kind and their stated rounding.

`parse_numbers` reads every number of a text: digits with thousands separators, signs, exponents and powers of
ten, multipliers (k, M, 万, million), percentages and ratios (x8, 16×, 3 倍), as a `Number` that knows its kind
("percent", "times" or "plain") and half its last written unit, so that `Number.agrees_with` tells whether a
printed value rounds to it; a hedged number ("about 3,900") rounds to its last significant digit.
"""

import re
from dataclasses import dataclass

ASCII_DIGITS = tuple("0123456789")
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
NUMBER = re.compile(r"""
    (?:(?<![A-Za-z0-9_.])(?P<times>[x×])(?=\d)      # x8, ×16
       |(?<![A-Za-z0-9_.,/\\]))                      # not inside a word, a version, a path or a slash group
    (?P<sign>[+\-−](?=\d))?
    (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)
    (?:[eE](?P<exp>[+\-−]?\d+))?
    (?:\s?[×x·]\s?10(?:(?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)|\^(?P<caret>[+\-−]?\d+)))?
    (?P<mult>\s?(?:万|亿)|(?:Ki|[kMB])(?![A-Za-z])|\s(?:thousand|million|billion)\b)?
    (?P<unit>\s?%|×(?!\s?\d)|\s?倍|x(?![A-Za-z0-9]))?
""", re.VERBOSE)
MULTIPLIER = {"k": 1e3, "Ki": 1024, "M": 1e6, "B": 1e9, "万": 1e4, "亿": 1e8, "thousand": 1e3, "million": 1e6,
              "billion": 1e9}
HEDGE = re.compile(r"(?:\babout|\baround|\broughly|\bapproximately|\bnearly|\balmost|\bsome|\bclose to|"
                   r"~|≈|约为?|大约为?|约有|将近|近)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """A number as written: its value, its kind ("percent", "times" or "plain") and half its last unit."""

    text: str
    value: float
    kind: str
    half_unit: float
    start: int
    end: int

    def agrees_with(self, printed):
        """Whether `printed` (a value of the same kind) rounds to this number, sign aside."""
        return abs(abs(printed) - abs(self.value)) <= self.half_unit * (1 + 1e-9) + 1e-12


def parse_numbers(text, hedges=True):
    """Every number written in `text`, in order; `hedges` lets "about 3,900" round to the hundred."""
    numbers = []
    for match in NUMBER.finditer(text):
        end = match.end()
        following = text[end:end + 2]
        mantissa = match["mantissa"]
        if mantissa == "10" and not match["sup"] and following[:1] and following[:1] in "⁰¹²³⁴⁵⁶⁷⁸⁹":
            sup = re.match(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", text[end:])[0]
            end += len(sup)
            number_text = text[match.start():end]
            value = 10.0 ** int(sup.translate(SUPERSCRIPT))
            numbers.append(Number(number_text, value, "plain", value * 1e-9, match.start(), end))
            continue
        if following[:1] in ASCII_DIGITS or (following[:1] in ".," and following[1:2] in ASCII_DIGITS):
            continue  # part of a longer token: 3.15.1, 1,2,3
        if following[:1].isascii() and following[:1].isalpha() and not match["unit"] and not match["mult"]:
            continue  # 4H, 2nd, 12ms: a name or a unit glued on, not a quantity the checker can read
        digits = mantissa.replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        exponent = int((match["exp"] or "0").replace("−", "-"))
        if match["sup"]:
            exponent += int(match["sup"].translate(SUPERSCRIPT))
        if match["caret"]:
            exponent += int(match["caret"].replace("−", "-"))
        scale = MULTIPLIER[match["mult"].strip()] if match["mult"] else 1.0
        unit_digits = decimals
        hedged = HEDGE.search(text[max(0, match.start() - 25):match.start()])
        if hedges and decimals == 0 and len(digits) >= 3 and hedged:
            unit_digits = -(len(digits) - len(digits.rstrip("0")))  # about 3,900: rounded to the hundred
        value = float(digits) * 10.0 ** exponent * scale
        if match["sign"] in ("-", "−"):
            value = -value
        unit = (match["unit"] or "").strip()
        kind = "percent" if unit == "%" else "times" if (unit or match["times"]) else "plain"
        half_unit = 0.5 * 10.0 ** (exponent - unit_digits) * scale
        numbers.append(Number(text[match.start():end], value, kind, half_unit, match.start(), end))
    return _spread_range_units(text, numbers)


def _spread_range_units(text, numbers):
    """In a range such as 10-40% or 4-5×, the first number takes the unit of the second."""
    spread = list(numbers)
    for index in range(len(spread) - 1):
        first, second = spread[index], spread[index + 1]
        between = text[first.end:second.start]
        if first.kind == "plain" and second.kind != "plain" and re.fullmatch(r"\s?(?:[-–]|to|至)\s?", between):
            spread[index] = Number(first.text, first.value, second.kind, first.half_unit, first.start,
                                   first.end)
    return spread
