"""SQuAD v1.1 and v2.0 (§4.2, §4.3): answer spans in a paragraph, and "no answer" for v2.0."""

import dataclasses
import json
from pathlib import Path

import numpy as np

from bertlib.tasks._files import existing_file

# SQuAD (§4.2, §4.3): the question is segment A, a window of the paragraph is segment B, and the model
# predicts where the answer starts and ends. Paragraphs longer than the window are read in overlapping
# windows `doc_stride` tokens apart, as in the released code (run_squad.py).

SQUAD_FILES = {("squad_v1", "train"): "train-v1.1.json", ("squad_v1", "dev"): "dev-v1.1.json",
               ("squad_v2", "train"): "train-v2.0.json", ("squad_v2", "dev"): "dev-v2.0.json"}


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph; `answers` are dicts with `text` and `answer_start` (a character)."""

    qid: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False


def squad_file(task, data_dir, split):
    """The official file name for the task and split (e.g. `dev-v2.0.json`), or `data_dir` when it is a file;
    `data_dir=None` finds the task's files by name (`bertlib.datasets.find`)."""
    if data_dir is None:
        from bertlib import datasets

        data_dir = datasets.find(task)
    data_dir = Path(data_dir)
    if data_dir.is_file():
        return data_dir
    if (task, split) not in SQUAD_FILES:
        raise ValueError(f"Unknown split {split!r} for {task}; expected 'train' or 'dev'.")
    name = SQUAD_FILES[task, split]
    return existing_file(data_dir / name, f"the SQuAD layout DATA_DIR/{name} (or give the JSON file itself)")


def load_squad(path):
    """Read a SQuAD JSON file. Returns `(examples, dataset)`; `dataset` is the JSON's "data" list, which
    `bertlib.metrics.squad_evaluate` scores against."""
    path = Path(path)
    try:
        document = json.loads(existing_file(path, "a SQuAD JSON file").read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(  # noqa: TRY004 (a wrong file, not a wrong argument type)
            f"{path} is not in the SQuAD layout: expected an object with a 'data' list of articles.")
    examples = []
    try:
        for article in document["data"]:
            for paragraph in article["paragraphs"]:
                for question in paragraph["qas"]:
                    examples.append(SquadExample(question["id"], question["question"], paragraph["context"],
                                                 question["answers"], bool(question.get("is_impossible", False))))
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path} is not in the SQuAD layout (data/paragraphs/context/qas/id/question/answers): "
                         f"missing {error}.") from error
    return examples, document["data"]


def tokenize_with_offsets(tokenizer, text):
    """WordPiece tokens of `text` and each token's (start, end) character span in `text`.

    The tokens are `tokenizer.tokenize(text)` (so the ids are those of `encode`) and the spans are those of
    the checkpoint's `tokenizer.json`: see `WordPieceTokenizer.tokenize_with_offsets`.
    """
    return tokenizer.tokenize_with_offsets(text)


@dataclasses.dataclass
class SquadFeatures:
    """Model inputs for SQuAD, one row per window, and what maps a row's predictions back to the text.

    `inputs`: token_ids, segment_ids, padding_mask, (n, seq) int32. `start_positions`, `end_positions`: (n,)
    labels (0, the [CLS] position, when the answer is not in the window or there is none). `example_index`:
    (n,) the row's question. `offsets`: (n, seq, 2) character span of each paragraph token, -1 elsewhere.
    `is_max_context`: (n, seq) True where this window gives the token its most context (the released code's
    rule for which window may predict a span starting there).
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    offsets: np.ndarray
    is_max_context: np.ndarray
    skipped: int = 0  # training questions whose answer text is not at answer_start in the paragraph

    def __len__(self):
        return len(self.example_index)


def _windows(num_tokens, window_length, doc_stride):
    starts = []
    start = 0
    while True:
        starts.append(start)
        if start + window_length >= num_tokens:
            return starts
        start += min(window_length, doc_stride)


def squad_features(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64):
    """`[CLS] question [SEP] paragraph window [SEP]` rows for every question (§4.2, figure 1).

    Example:
    >>> features = squad_features(examples, tokenizer, max_seq_length=128, doc_stride=64)
    >>> features.inputs["token_ids"].shape  # (windows, 128)
    """
    special = {name: tokenizer.token_to_id(name) for name in ("[CLS]", "[SEP]")}
    for name, value in (("doc_stride", doc_stride), ("max_query_length", max_query_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            # a stride of 0 would read the first window forever
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if max_seq_length < max_query_length + 3 + 1:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the paragraph after a question of "
                         f"up to max_query_length={max_query_length} tokens; use at least {max_query_length + 4}.")
    rows = {name: [] for name in ("token_ids", "segment_ids", "padding_mask", "start", "end", "example", "offsets",
                                  "max_context")}
    paragraph_cache = {}  # the questions of one paragraph are consecutive: tokenize it once
    skipped = 0
    for example_index, example in enumerate(examples):
        if example.context not in paragraph_cache:
            tokens, offsets = tokenize_with_offsets(tokenizer, example.context)
            paragraph_cache = {example.context: ([tokenizer.token_to_id(t) for t in tokens], offsets)}
        paragraph_ids, paragraph_offsets = paragraph_cache[example.context]
        question_ids = tokenizer.encode(example.question)[:max_query_length]

        answer_tokens = None  # (first, last) paragraph token of the first gold answer
        if example.answers and not example.is_impossible:
            answer = example.answers[0]
            start_char = answer["answer_start"]
            end_char = start_char + len(answer["text"])
            if example.context[start_char:end_char].strip() != answer["text"].strip():
                skipped += 1  # the released code skips these too ("Could not find answer")
            else:
                inside = [i for i, (start, end) in enumerate(paragraph_offsets) if start < end_char and end > start_char]
                answer_tokens = (inside[0], inside[-1]) if inside else None

        window_length = max_seq_length - len(question_ids) - 3
        starts = _windows(len(paragraph_ids), window_length, doc_stride)
        for window_start in starts:
            window = range(window_start, min(window_start + window_length, len(paragraph_ids)))
            token_ids = [special["[CLS]"], *question_ids, special["[SEP]"],
                         *[paragraph_ids[i] for i in window], special["[SEP]"]]
            first = len(question_ids) + 2  # sequence position of the window's first paragraph token
            offsets = np.full((max_seq_length, 2), -1, dtype=np.int32)
            max_context = np.zeros(max_seq_length, dtype=bool)
            for position, i in enumerate(window, start=first):
                offsets[position] = paragraph_offsets[i]
                max_context[position] = _is_max_context(starts, window_length, len(paragraph_ids), window_start, i)
            start_position = end_position = 0
            if answer_tokens and window.start <= answer_tokens[0] and answer_tokens[1] < window.stop:
                start_position = answer_tokens[0] - window_start + first
                end_position = answer_tokens[1] - window_start + first
            padding = max_seq_length - len(token_ids)
            rows["token_ids"].append(token_ids + [tokenizer.pad_id] * padding)
            rows["segment_ids"].append([0] * first + [1] * (len(token_ids) - first) + [0] * padding)
            rows["padding_mask"].append([1] * len(token_ids) + [0] * padding)
            rows["start"].append(start_position)
            rows["end"].append(end_position)
            rows["example"].append(example_index)
            rows["offsets"].append(offsets)
            rows["max_context"].append(max_context)
    inputs = {name: np.asarray(rows[name], dtype=np.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
    return SquadFeatures(inputs, np.asarray(rows["start"], np.int32), np.asarray(rows["end"], np.int32),
                         np.asarray(rows["example"], np.int32), np.asarray(rows["offsets"]),
                         np.asarray(rows["max_context"]), skipped)


def _is_max_context(starts, window_length, num_tokens, window_start, token):
    """Whether `window_start`'s window sees `token` with the most context on its shorter side (run_squad.py)."""
    def score(start):
        end = min(start + window_length, num_tokens) - 1
        if not start <= token <= end:
            return -1.0
        return min(token - start, end - token) + 0.01 * (end - start + 1)

    return max(starts, key=score) == window_start


def squad_predictions(examples, features, start_logits, end_logits, n_best_size=20, max_answer_length=30,
                      version_2=False, null_score_diff_threshold=0.0):
    """The answer text per question id from the span logits (§4.2: the best start + end score with end >= start;
    §4.3: answer "" when the [CLS] "null" score beats the best span by more than the threshold).

    Returns `(predictions, null_score_diffs)`: dicts question id -> text and -> null score minus best span score
    (v2.0; what `null_odds.json` holds in the released code).
    """
    by_example = {}
    for row, example_index in enumerate(features.example_index):
        by_example.setdefault(int(example_index), []).append(row)
    predictions, null_score_diffs = {}, {}
    for example_index, example in enumerate(examples):
        best_score, best_span, null_score = -np.inf, None, np.inf
        for row in by_example.get(example_index, []):
            null_score = min(null_score, float(start_logits[row][0] + end_logits[row][0]))
            top_starts = np.argsort(start_logits[row])[::-1][:n_best_size]
            top_ends = np.argsort(end_logits[row])[::-1][:n_best_size]
            for start in top_starts:
                if features.offsets[row, start, 0] < 0 or not features.is_max_context[row, start]:
                    continue
                for end in top_ends:
                    if features.offsets[row, end, 0] < 0 or not 0 <= end - start < max_answer_length:
                        continue
                    score = float(start_logits[row][start] + end_logits[row][end])
                    if score > best_score:
                        best_score = score
                        best_span = (features.offsets[row, start, 0], features.offsets[row, end, 1])
        text = example.context[best_span[0]:best_span[1]] if best_span else ""
        if version_2:
            null_score_diffs[example.qid] = null_score - best_score if best_span else float("inf")
            if null_score_diffs[example.qid] > null_score_diff_threshold:
                text = ""
        predictions[example.qid] = text
    return predictions, null_score_diffs
