"""Arithmetic written out in prose ("512 × 15% × 80% = 61.44"), recomputed.

`arithmetic` finds each all-numeric expression of a sentence followed by its result (=, ≈) and says whether the
result holds at the rounding it is written to; expressions are evaluated through `ast` with numeric operators
only (`_evaluate`), never `eval`.
"""

import ast
import operator
import re
import warnings

from coursekit.prose.numbers import Number, parse_numbers

_TOKEN = re.compile(r"(?P<number>PLACEHOLDER\d+)|(?P<op>[×*·/÷+\-−^²³]|(?<=\s)x(?=\s))|(?P<open>\()|"
                    r"(?P<close>\))|(?P<eq>=|≈|~)|(?P<space>\s+)|(?P<other>.)")


def arithmetic(text):
    """`(result Number, holds)` for each all-numeric expression `... = result` or `... ≈ result` in `text`."""
    text = re.sub(r"(?<=[\d)])\s*/\s*(?=[\d(])", " / ", text)  # 512/128 divides here (a label elsewhere)
    numbers = parse_numbers(text, hedges=False)
    placeholder, mapping, position = [], {}, 0
    for index, number in enumerate(numbers):
        placeholder.append(text[position:number.start])
        placeholder.append(f"PLACEHOLDER{index}")
        mapping[f"PLACEHOLDER{index}"] = number
        position = number.end
    placeholder.append(text[position:])
    tokens = [(match.lastgroup, match[0]) for match in _TOKEN.finditer("".join(placeholder))]
    results = []
    for index, (kind, value) in enumerate(tokens):
        if kind != "eq":
            continue
        left = index - 1
        while left >= 0 and tokens[left][0] in ("number", "op", "open", "close", "space"):
            left -= 1
        expression = [token for token in tokens[left + 1:index] if token[0] != "space"]
        right = next((token for token in tokens[index + 1:] if token[0] != "space"), None)
        if right is None or right[0] != "number":
            continue
        while expression and expression[0][0] in ("op", "close") and expression[0][1] not in "+-−":
            expression.pop(0)
        operands = [token for token in expression if token[0] == "number"]
        operators = [token for token in expression if token[0] == "op"]
        if len(operands) < 2 and not any(op[1] in "²³" for op in operators):
            continue
        python = []
        for token_kind, token in expression:
            if token_kind == "number":
                number = mapping[token]
                if number.text[:1] in "+-−" and python and python[-1].endswith(")"):
                    python.append("+")  # 88.5−77.8: the sign is the operator
                python.append(f"({number.value / 100 if number.kind == 'percent' else number.value!r})")
            elif token_kind == "op":
                python.append({"×": "*", "x": "*", "·": "*", "÷": "/", "−": "-", "^": "**", "²": "**2",
                               "³": "**3"}.get(token, token))
            else:
                python.append(token)
        code = "".join(python)
        while code.count("(") > code.count(")") and code.startswith("("):
            code = code[1:]
        computed = _evaluate(code)
        if computed is None:
            continue
        result = mapping[right[1]]
        if value != "=":  # ≈ and ~ round like a hedged number: "≈ 1,800" to the hundred
            half_unit = parse_numbers("about " + result.text)[0].half_unit
            result = Number(result.text, result.value, result.kind, half_unit, result.start, result.end)
        candidates = [computed * 100, computed] if result.kind == "percent" else [computed]
        results.append((result, any(result.agrees_with(candidate) for candidate in candidates)))
    return results


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _evaluate(code):
    """The value of an expression of numbers and + - * / ** (parentheses too); None if it is anything else."""
    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(ast.dump(node))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "(2.0)(3.0)" warns before it fails
            return value(ast.parse(code, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
