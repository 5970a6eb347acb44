"""What the prose says about its numbers, checked against the outputs (issue 35, item 3).

`claim_problems` gives each finding of one unit: a **direction** (a comparative or a one-sided word whose
numbers, quoted or printed, say otherwise; a direction claimed where the printed comparison says "no
measurable difference"), a **quantifier** ("many times", "an order of magnitude") with no printed ratio of that
size nearby (`nearest_ratio_lines`), a **pointer** ("see chapter 04") to a chapter that does not hold what it
points at, and an **extrapolation** about a curve beyond the steps, tokens or epochs the outputs print
(`printed_series`).
"""

import re
from dataclasses import dataclass
from pathlib import Path

from coursekit.prose.labels import column_problems, label_problems
from coursekit.prose.numbers import parse_numbers
from coursekit.prose.sentences import quantities

_UP = (r"higher|above|exceeds?|exceeded|beats?|more than|greater than|larger than|optimistic|inflates?|"
       r"overstates?|高于|超过|大于|偏乐观|偏高")
_DOWN = (r"lower|below|under|less than|smaller than|fewer than|pessimistic|compress(?:es|ed)?|deflates?|"
         r"understates?|低于|小于|偏悲观|偏低|压缩")
DIRECTION = re.compile(rf"(?<![A-Za-z])(?:(?P<up>{_UP})|(?P<down>{_DOWN}))(?![A-Za-z])", re.IGNORECASE)
# Words that say which side of the other one a single named value lies (no second operand after them).
ONE_SIDED = re.compile(r"optimistic|pessimistic|compress|deflate|inflate|overstate|understate|偏乐观|偏悲观|偏高|"
                       r"偏低|压缩", re.IGNORECASE)
# "printed above", "the table below": a place in the notebook, not a direction.
LOCATIONAL = re.compile(r"(?:printed|asserted|shown|see|listed|table|chart|plot|cell|output|as|from|computed|"
                        r"defined|described|run|stated|comparison|figures?|numbers?|check)\s+$", re.IGNORECASE)
# A number right before a direction word that is its size, not an operand: "10 points above", "4× fewer".
AMOUNT = re.compile(r"^\s*(?:(?:percentage\s+)?points?|pp|times|个百分点|倍|分)\b", re.IGNORECASE)
CLAUSE_END = re.compile(r"[;；:：]")
NULL_VERDICT = re.compile(r"no measurable difference|range includes 0|no claim|not clearly (?:above|below)|"
                          r"within noise", re.IGNORECASE)
# A clause that says the difference is not measurable may still say where the median lies.
NULL_ACKNOWLEDGED = re.compile(r"not measurably|no measurable|across zero|includes (?:zero|0)|no claim|"
                               r"within noise|median|不可测|跨过零|跨越零|包含 ?0|中位数|无法区分|没有可测", re.IGNORECASE)
SLASH_ITEM = re.compile(r"(?<![\w./])\d+(?:/\d+){2,}(?![\w/])")
QUANTIFIER = re.compile(r"(?P<ten>by\s+(?:an|one)\s+order\s+of\s+magnitude|(?:an|one)\s+order\s+of\s+magnitude"
                        r"(?=\s+(?:more|less|larger|smaller|higher|lower|faster|slower|above|below|bigger|cheaper))|"
                        r"大一个数量级|高一个数量级)|"
                        r"(?P<many>many\s+times\s+(?:the|more|larger|bigger|higher|lower|smaller|as|that|its)\b|"
                        r"许多倍|好几倍)|(?P<orders>orders\s+of\s+magnitude|几个数量级)|"
                        r"(?P<hundreds>hundreds\s+of\s+times|上百倍|数百倍)", re.IGNORECASE)
QUANTIFIER_SIZE = {"many": 3.0, "ten": 10 ** 0.5, "orders": 10 ** 1.5, "hundreds": 100.0}
PRINTED_RATIO = re.compile(r"(?<![\w.])[x×](\d[\d.,]*)|(\d[\d.,]*)\s*(?:×|x(?![A-Za-z0-9])|\s+times\b|倍)")


def _is_locational(text, match):
    after = text[match.end():match.end() + 2]
    return match[0].lower() in ("above", "below") and (
        LOCATIONAL.search(text[max(0, match.start() - 30):match.start()]) or not after.strip()
        or after[:1] in ").,;:")


def _same_clause(text, start, end):
    return not CLAUSE_END.search(text[start:end])


def _quoted_pair(text, numbers, word):
    """'A above B' with A and B quoted: the pair (A, B), or None where the word has no quoted operand on a side."""
    before = [number for number in numbers if number.end <= word.start() <= number.end + 60
              and _same_clause(text, number.end, word.start()) and not AMOUNT.match(text[number.end:])
              and not (number.kind == "times" and not text[number.end:word.start()].strip())]
    after = [number for number in numbers if word.end() <= number.start <= word.end() + 40
             and not re.search(r"[,;；:：()（）]", text[word.end():number.start])]  # "more than that, x28.8"
    if not before or not after or AMOUNT.match(text[after[0].end:]) or before[-1].kind != after[0].kind:
        return None
    return before[-1], after[0]


def _direction_of_quoted_pairs(text, numbers):
    """Rule (a): a sentence that puts two quoted numbers around a comparative orders them as the word says."""
    wrong = []
    for word in DIRECTION.finditer(text):
        pair = None if _is_locational(text, word) or ONE_SIDED.match(word[0]) else _quoted_pair(text, numbers,
                                                                                               word)
        if pair and pair[0].value != pair[1].value and (pair[0].value > pair[1].value) != bool(word["up"]):
            wrong.append((word[0], f"{pair[0].text} {word[0]} {pair[1].text}"))
    return wrong


STOP_WORDS = frozenset("the and but not for with from into than then that this these those its are was were has "
                       "have had one two all any each every only also our their which what when where while of to "
                       "in on at by as".split())


def _label_value(label, text, numbers, lines, like=None):
    """The value a label names: a quantity quoted within 15 characters after it in the sentence, else the first
    one (of kind `like`) within 40 characters after it in a printed line. `(Number, where)` or None."""
    for number in numbers:
        if 0 <= number.start - label.end <= 15:
            return number, "quoted"
    for line in lines:
        for found in re.finditer(rf"(?<![\w-]){re.escape(label.printed)}(?![\w-])", line, re.IGNORECASE):
            values = [number for number in quantities(line[found.end():found.end() + 40])
                      if like is None or number.kind == like]
            if values:
                return values[0], line.strip()
    return None


@dataclass(frozen=True)
class Label:
    """A word of a sentence that names a value, and the word a printed line names it by."""

    printed: str
    start: int
    end: int


# The Chinese edition's sentences name the values its (English) outputs print: its words for the printed labels.
PRINTED_LABELS_ZH = {"实测": "measured", "计数": "counted", "开发集": "dev", "测试集": "test", "训练集": "train",
                     "朴素": "naive", "天真": "naive"}


def _labels(text, numbers, lines):
    """The words of a sentence that name a value: a quantity follows them in the sentence (15 characters) or in
    a printed line (40)."""
    words = [Label(match[0], match.start(), match.end())
             for match in re.finditer(r"(?<![\w-])[A-Za-z][A-Za-z-]{2,}(?![\w-])", text)
             if match[0].lower() not in STOP_WORDS]
    words += [Label(english, match.start(), match.end()) for chinese, english in PRINTED_LABELS_ZH.items()
              for match in re.finditer(chinese, text)]
    labels = []
    for label in sorted(words, key=lambda label: label.start):
        pattern = re.compile(rf"(?<![\w-]){re.escape(label.printed)}(?![\w-])(.{{0,40}})", re.IGNORECASE)
        if (any(0 <= number.start - label.end <= 15 for number in numbers)
                or any(quantities(found[1]) for line in lines for found in pattern.finditer(line))):
            labels.append(label)
    return labels


def _best_lines(text, lines):
    """The printed lines, the ones sharing the most words with the sentence first."""
    words = set(re.findall(r"[a-z]{3,}", text.lower()))
    return sorted(lines, key=lambda line: -len(words & set(re.findall(r"[a-z]{3,}", line.lower()))))


def _direction_of_labelled_pairs(text, numbers, lines):
    """Rule (b): "the dev F1 is optimistic" against "the test F1 (83.1)", "compresses the measured ratio"
    against a printed "measured x28.8; counted x16.00": the values the two labels name, quoted or printed."""
    wrong = []
    for word in DIRECTION.finditer(text):
        if not ONE_SIDED.match(word[0]):
            continue  # a comparative between two quoted numbers is rule (a)'s
        labels = [label for label in _labels(text, numbers, lines) if _same_clause(
            text, min(label.end, word.end()), max(label.start, word.start()))]
        # An adjective is said of the label before it ("the dev F1 is optimistic"), a verb of its object.
        verb = bool(re.match(r"compress|deflate|inflate|overstate|understate|压缩", word[0], re.IGNORECASE))
        own = [label for label in labels if (label.start > word.end() if verb else label.end < word.start())
               and abs(label.start - word.start()) <= 40]
        if not own:
            continue
        subject = own[0] if verb else own[-1]
        ranked = _best_lines(text, lines)
        mine = _label_value(subject, text, numbers, ranked)
        for other in (label for label in labels if label.printed.lower() != subject.printed.lower()):
            theirs = mine and _label_value(other, text, numbers, ranked, like=mine[0].kind)
            if not theirs or "quoted" == theirs[1] == mine[1] or "quoted" not in (theirs[1], mine[1]) and (
                    theirs[1] != mine[1]):
                continue  # both quoted is rule (a)'s; two printed lines are no printed pair
            if mine[0].value != theirs[0].value and (mine[0].value > theirs[0].value) != bool(word["up"]):
                wrong.append((word[0], f"{subject.printed} {mine[0].text} against {other.printed} "
                                       f"{theirs[0].text}"))
            break
    return wrong


def _null_verdicts_contradicted(text, lines):
    """Rule (b): a printed "no measurable difference" (or "range includes 0", "no claim") for an item such as
    0/20/80 against 80/10/10 forbids a direction word between the two, unless the clause says it is not
    measurable (its median may still lie above)."""
    null_lines = [line for line in lines if NULL_VERDICT.search(line)]
    wrong = []
    for word in DIRECTION.finditer(text):
        if not null_lines or _is_locational(text, word):
            continue
        start = max((end.end() for end in CLAUSE_END.finditer(text, 0, word.start())), default=0)
        end = next((end.start() for end in CLAUSE_END.finditer(text, word.end())), len(text))
        if NULL_ACKNOWLEDGED.search(text[start:end]):
            continue
        before = [item for item in SLASH_ITEM.finditer(text, start, word.start()) if word.start() - item.end() <= 40]
        after = next((item for item in SLASH_ITEM.finditer(text, word.end(), end)
                      if item.start() - word.end() <= 40), None)
        if not before or after is None:
            continue  # a verdict is about a pair: "0/20/80 against 80/10/10"
        item = before[-1][0]
        pair_lines = [line for line in lines if item in line and after[0] in line]
        hits = [line for line in pair_lines if NULL_VERDICT.search(line)]
        # Another measure of the same pair may print the direction the sentence gives: which one it means is
        # not for a pattern to decide.
        sense = "higher" if word["up"] else "lower"
        if hits and not any(re.search(rf":\s*{sense}\b", line) for line in pair_lines):
            wrong.append((word[0], f"{item} {word[0]} {after[0]}; printed: {hits[0].strip()}"))
    return wrong


def _printed_ratios(lines):
    return [float((match[1] or match[2]).replace(",", "")) for line in lines for match in PRINTED_RATIO.finditer(line)
            if re.fullmatch(r"\d+(?:\.\d+)?", (match[1] or match[2]).replace(",", ""))]


def _quantifiers_unsupported(text, ratio_lines):
    """Rule (c): "many times", "an order of magnitude" need a printed ratio of that size in the output they
    describe (the nearest code cell that prints a ratio)."""
    ratios = _printed_ratios(ratio_lines)
    return [(match[0], f"largest printed ratio x{max(ratios):g}") for match in QUANTIFIER.finditer(text)
            if ratios and max(ratios) < QUANTIFIER_SIZE[match.lastgroup]]


POINTER = re.compile(r"\bsee\s+(?:also\s+)?chapters?\s+(?P<see>\d+x?)\b|"
                     r"\bchapter\s+(?P<own>\d+x?)(?:'s|’s)\s+(?P<owned>[^.;:()]*)|"
                     r"\bchapter\s+(?P<does>\d+x?)\s+(?:shows?|showed|measures?|measured|runs?|ran|tests?|tested|"
                     r"trains?|trained|checks?|checked|counts?|counted|asserts?|asserted|times|timed|compares?|"
                     r"compared|finds?|found)\s+(?P<done>[^.;:()]*)|"
                     r"见第\s*(?P<zh_see>\d+x?)\s*章|第\s*(?P<zh_own>\d+x?)\s*章的\s*(?P<zh_owned>[^。；：（）]*)",
                     re.IGNORECASE)
# A pointer to a topic ("..., which chapter 07 comes back to"; "..., is taken up in chapter 7"): the topic is the
# clause before it, read as its `code` terms and its longer words; the chapter must hold the code terms and one
# of those words in one sentence. Read on a cell's markdown as written, since prose units hide `code`.
TOPIC_POINTER = re.compile(r"\b(?:which|that)\s+chapter\s+(?P<back>\d+x?)\s+(?:comes?\s+back\s+to|returns?\s+to|"
                           r"revisits?|takes?\s+up)\b|\bis\s+taken\s+up\s+in\s+chapter\s+(?P<taken>\d+x?)\b|"
                           r"第\s*(?P<zh_back>\d+x?)\s*章(?:会|将)?再?(?:回到|讨论|谈到)", re.IGNORECASE)
CODE_TERM = re.compile(r"`([^`]+)`")
TOPIC_WORD = re.compile(r"[A-Za-z][A-Za-z-]{5,}|[\u4e00-\u9fff]{2,}")
DETERMINER = frozenset("a an the which whether that how what this these".split())
NEGATED = re.compile(r"\b(?:not|never|cannot|fails? to)\s+(?:which|whether|how|what|when|where|if)?\s*"
                     r"(?P<what>[^,.;:()]+)", re.IGNORECASE)
PLAIN_VERBS = frozenset("is are was were does do did comes come goes go gets get tells tell".split())
# The Chinese "but cannot tell which segment comes first": what follows is read as its two-character pieces.
NEGATED_ZH = re.compile(r"(?:分不出|不能|无法|不知道|看不出)(?:哪|是否|什么|谁)?(?P<what>[\u4e00-\u9fff]{2,})")


def _key_term(phrase):
    """The noun phrase a pointer names: its first words up to a function word or a verb (a word followed by an
    article): "NSP head tells a ..." -> ["nsp", "head"]."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9'-]*", phrase.lower())
    while words and words[0] in DETERMINER:
        words.pop(0)
    term = []
    for word, following in zip(words, words[1:] + [""]):
        if word in STOP_WORDS or word in DETERMINER or following in DETERMINER or len(term) == 3:
            break
        term.append(word)
    return term


def _said_in(words, sentences):
    """Whether one sentence (or code line) of a chapter holds every word (by its first five letters)."""
    stems = [word.replace("-", " ")[:5] for word in words]
    return any(all(stem in sentence for stem in stems) for sentence in sentences)


def _pointer_problems(text, folder, facts_of):
    """Rule 2: a pointer names a chapter that exists, and that chapter has a sentence holding the key term the
    pointer names and each thing it says the chapter does not show."""
    problems = []
    for match in POINTER.finditer(text):
        chapter = next(group for group in (match["see"], match["own"], match["does"], match["zh_see"],
                                           match["zh_own"]) if group)
        stems = sorted(Path(folder).glob(f"{chapter.zfill(2) if chapter.isdigit() else chapter}_*.ipynb"))
        if not stems:
            problems.append((match[0], f"no chapter {chapter} in {Path(folder).as_posix()}"))
            continue
        sentences = facts_of(stems[0]).sentences
        phrase = match["owned"] or match["done"] or ""
        terms = [_key_term(phrase)] if phrase else []
        if match["zh_owned"]:
            terms.append(re.findall(r"[A-Za-z][A-Za-z0-9-]+", match["zh_owned"].lower())[:2])
            terms += [[negated["what"][start:start + 2] for start in range(len(negated["what"]) - 1)]
                      for negated in NEGATED_ZH.finditer(match["zh_owned"])]
        for negated in NEGATED.finditer(phrase):
            terms.append([word for word in re.findall(r"[A-Za-z][A-Za-z0-9-]+", negated["what"].lower())
                          if word not in STOP_WORDS | DETERMINER | PLAIN_VERBS])
        for term in terms:
            if term and not _said_in(term, sentences):
                problems.append((match[0], f"chapter {chapter} has no sentence with {' + '.join(term)}"))
    return problems


def topic_pointer_problems(source, folder, facts_of):
    """Rule 2 for a pointer to a topic, on one markdown cell as written: `(what, why)` for each pointer whose
    chapter is missing or has no sentence with the clause's `code` terms and one of its longer words."""
    problems = []
    for match in TOPIC_POINTER.finditer(source):
        chapter = next(group for group in (match["back"], match["taken"], match["zh_back"]) if group)
        stems = sorted(Path(folder).glob(f"{chapter.zfill(2) if chapter.isdigit() else chapter}_*.ipynb"))
        if not stems:
            problems.append((match[0], f"no chapter {chapter} in {Path(folder).as_posix()}"))
            continue
        problems += _topic_missing(source[:match.start()], chapter, facts_of(stems[0]).sentences, match[0])
    return problems


def _topic_missing(before, chapter, sentences, pointer):
    """The clause runs back to the last sentence or clause end."""
    clause = re.split(r"[.;:]\s|[。；：]", " ".join(before.split()))[-1]
    codes = [code.lower() for code in CODE_TERM.findall(clause)]
    words = []  # stems: an English word's first five letters, every four characters of a Chinese run
    for word in TOPIC_WORD.findall(CODE_TERM.sub(" ", clause)):
        if word.isascii():
            words += [] if word.lower() in STOP_WORDS else [word.lower()[:5]]
        else:
            words += [word[start:start + 4] for start in range(max(1, len(word) - 3))]
    if not (codes or words):
        return []
    if any(all(code in sentence for code in codes) and (not words or any(word in sentence for word in words))
           for sentence in sentences):
        return []
    topic = " + ".join(codes + (["one of " + "/".join(words[:6])] if words else []))
    return [(pointer, f"chapter {chapter} has no sentence with {topic}")]


CURVE = re.compile(r"\b(?:keeps?|kept|continues?|continued|beyond|past|would|still)\b|继续|仍在|之后",
                   re.IGNORECASE)
SERIES_UNIT = re.compile(r"^\s*(?P<unit>steps?|tokens?|epochs?|步|个词元|轮)", re.IGNORECASE)
UNIT_NAMES = {"步": "step", "个词元": "token", "轮": "epoch"}


def _unit_of(name):
    return UNIT_NAMES.get(name, name.lower().rstrip("s"))


def printed_series(lines):
    """Per unit (step, token, epoch), the values the outputs print with it: "1500 steps", "step 1500"."""
    series = {}
    for line in lines:
        for number in parse_numbers(line, hedges=False):
            after = SERIES_UNIT.match(line[number.end:])
            before = re.search(r"(?P<unit>steps?|tokens?|epochs?)\s*[:=]?\s*$", line[:number.start], re.IGNORECASE)
            for found in (after, before):
                if found:
                    series.setdefault(_unit_of(found["unit"]), []).append(abs(number.value))
    return series


def _beyond_the_curve(text, numbers, series):
    """Rule 3: a number of steps, tokens or epochs in a sentence about a curve's course lies inside the range
    the outputs print for that unit."""
    if not CURVE.search(text):
        return []
    wrong = []
    for number in numbers:
        unit = SERIES_UNIT.match(text[number.end:])
        values = series.get(_unit_of(unit["unit"])) if unit else None
        if values and len(set(values)) >= 2 and not min(values) <= abs(number.value) <= max(values):
            wrong.append((number.text, f"printed {_unit_of(unit['unit'])}s run {min(values):g}-{max(values):g}"))
    return wrong


def nearest_ratio_lines(window, index, facts, below):
    """The printed lines of the code cell nearest the sentence (before it; after it for "below") that print a
    ratio: what a "many times" describes."""
    ordered = [code for code in window if code > index] if below else [code for code in reversed(window)
                                                                         if code < index]
    return next((facts.lines[code] for code in ordered if _printed_ratios(facts.lines[code])), [])


def claim_problems(unit, lines, ratio_lines, series, folder, facts_of, every_line=()):
    """`(kind, what, why)` for each claim of a unit that its outputs (or the chapter it points to) contradict;
    `every_line`: what the whole notebook prints (a quoted column is looked for there)."""
    numbers = quantities(unit.text)
    problems = [("direction", *problem) for problem in (_direction_of_quoted_pairs(unit.text, numbers)
                                                       + _direction_of_labelled_pairs(unit.text, numbers, lines)
                                                       + _null_verdicts_contradicted(unit.text, lines))]
    problems += [("pointer", *problem) for problem in _pointer_problems(unit.text, folder, facts_of)]
    problems += [("label", *problem) for problem in label_problems(unit.text)]
    if not (unit.cited or unit.row_cited):  # the paper's own "many times" and its curves are the paper's
        problems += [("quantifier", *problem) for problem in _quantifiers_unsupported(unit.text, ratio_lines)]
        problems += [("extrapolation", *problem) for problem in _beyond_the_curve(unit.text, numbers, series)]
        problems += [("column", *problem) for problem in column_problems(unit.text, every_line)]
    return problems
