"""SQuAD v1.1 and v2.0 (§4.2, §4.3): answer spans in a paragraph, and "no answer" for v2.0."""

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np

from bertlib.finetune import metrics
from bertlib.finetune.tasks._files import existing_file, read_text
from bertlib.finetune.tasks._task import EVAL_BATCH_SIZE, Task, TaskData, predict, subset

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
    `data_dir=None` finds the task's files by name (`bertlib.io.downloads.find`)."""
    if data_dir is None:
        from bertlib.io import downloads

        data_dir = downloads.find(task)
    data_dir = Path(data_dir)
    if data_dir.is_file():
        return data_dir
    if (task, split) not in SQUAD_FILES:
        raise ValueError(f"Unknown split {split!r} for {task}; expected 'train' or 'dev'.")
    name = SQUAD_FILES[task, split]
    return existing_file(data_dir / name, f"the SQuAD layout DATA_DIR/{name} (or give the JSON file itself)")


@dataclasses.dataclass
class SquadFile:
    """A SQuAD JSON file read: its questions, its "data" list (what the official scripts score against), and
    the ids of the questions whose `answer_start` counted UTF-16 code units and was converted to characters."""

    path: Path
    examples: list
    dataset: list
    utf16_offsets: list


def read_squad(path):
    """Read a SQuAD JSON file into a `SquadFile`, checking its layout.

    An `answer_start` is a character offset into the paragraph. Tools written in JavaScript count UTF-16 code
    units instead, which differs after any character outside the Basic Multilingual Plane (emoji, rare CJK):
    an answer found at its start read that way is converted, and named in `utf16_offsets` (and a warning).
    """
    path = existing_file(path, "a SQuAD JSON file")
    try:
        document = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(  # noqa: TRY004 (a wrong file, not a wrong argument type)
            f"{path} is not in the SQuAD layout: expected an object with a 'data' list of articles.")
    examples, utf16_offsets, seen = [], [], {}
    try:
        for article_number, article in enumerate(document["data"], start=1):
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                for question in paragraph["qas"]:
                    qid, text, given = question["id"], question["question"], question["answers"]
                    _check_unique_id(path, qid, article_number, seen)
                    answers = [_character_offsets(context, answer) for answer in given]
                    if any(answer is not original for answer, original in zip(answers, given)):
                        utf16_offsets.append(qid)
                    examples.append(SquadExample(qid, text, context, answers,
                                                 bool(question.get("is_impossible", False))))
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path} is not in the SQuAD layout (data/paragraphs/context/qas/id/question/answers): "
                         f"missing {error}.") from error
    if utf16_offsets:
        warnings.warn(f"{path}: the answer_start of {len(utf16_offsets)} question(s) counts UTF-16 code units, as "
                      f"JavaScript tools write offsets, not characters (e.g. question id {utf16_offsets[0]!r}); "
                      "they were read as UTF-16 offsets.", RuntimeWarning, stacklevel=2)
    return SquadFile(path, examples, document["data"], utf16_offsets)


def _check_unique_id(path, qid, article_number, seen):
    # Predictions and scores are kept by question id: a second question of that id would silently replace the
    # first, and the score be counted over one question fewer than the file holds.
    if qid in seen:
        raise ValueError(f"{path}: question id {qid!r} is used twice (articles {seen[qid]} and {article_number} of "
                         "'data'); every SQuAD question needs its own id.")
    seen[qid] = article_number


def load_squad(path):
    """Read a SQuAD JSON file. Returns `(examples, dataset)`; `dataset` is the JSON's "data" list, which
    `bertlib.finetune.metrics.squad_evaluate` scores against (see `read_squad`)."""
    squad = read_squad(path)
    return squad.examples, squad.dataset


def _character_offsets(context, answer):
    """`answer` itself when its text is at `answer_start`, or when it is not there either way; a copy with the
    start in characters when `answer_start` counted UTF-16 code units and the text is there read that way."""
    start, text = answer["answer_start"], answer["text"]
    if not isinstance(start, int) or context[start:start + len(text)] == text or context.isascii():
        return answer
    try:
        start_in_characters = len(context.encode("utf-16-le")[:2 * start].decode("utf-16-le"))
    except UnicodeDecodeError:  # the offset falls inside a surrogate pair: not a UTF-16 count either
        return answer
    if context[start_in_characters:start_in_characters + len(text)] != text:
        return answer
    return {**answer, "answer_start": start_in_characters}


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
    skipped: int = 0  # questions whose first answer's text is not at its answer_start in the paragraph
    skipped_ids: list = dataclasses.field(default_factory=list)  # their ids

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


def squad_features(examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
                   is_training=False):
    """`[CLS] question [SEP] paragraph window [SEP]` rows for every question (§4.2, figure 1).

    A question whose first answer's text is not at its `answer_start` has no label; it is counted (`skipped`,
    `skipped_ids`) and, with `is_training`, left out, as the released run_squad.py leaves it out of training
    ("Could not find answer") instead of teaching the model that it has none.

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
    skipped_ids = []
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
                skipped_ids.append(example.qid)
                if is_training:
                    continue
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
                         np.asarray(rows["max_context"]), len(skipped_ids), skipped_ids)


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


@dataclasses.dataclass(frozen=True, repr=False)
class SquadTask(Task):
    """SQuAD v1.1 (§4.2) or v2.0 (§4.3): a start and an end vector over the paragraph's tokens, scored with the
    official scripts' exact match and F1 (v2.0 with the null score differences as no-answer values)."""

    name: str
    version_2: bool
    trim_batches = False  # span logits must keep every position
    output_patterns = ("predictions.json", "null_odds.json")

    @property
    def metric_names(self):
        return metrics.TASK_METRICS[self.name]

    def read(self, data_dir, tokenizer, settings):
        """Train and dev windows; a v1.1 question without an answer is refused before any work, and training
        questions whose answer is not at its `answer_start` are counted, named and left out."""
        train_path, dev_path = (squad_file(self.name, data_dir, split) for split in ("train", "dev"))
        train_file = read_squad(train_path)
        dev_file = train_file if dev_path == train_path else read_squad(dev_path)  # one JSON file for both
        if not self.version_2:
            for squad in (train_file, dev_file):
                _check_every_question_answered(squad)
        train_examples = [train_file.examples[i]
                          for i in subset(len(train_file.examples), settings.max_train_examples, settings.seed)]
        dev_examples = [dev_file.examples[i] for i in subset(len(dev_file.examples), settings.max_eval_examples)]
        options = {"max_seq_length": settings.max_seq_length, "doc_stride": settings.doc_stride,
                   "max_query_length": settings.max_query_length}
        train = squad_features(train_examples, tokenizer, is_training=True, **options)
        utf16 = len(train_file.utf16_offsets) + (len(dev_file.utf16_offsets) if dev_file is not train_file else 0)
        report = {"answer_starts_read_as_utf16": utf16} if utf16 else {}
        if train.skipped:
            report["train_questions_left_out"] = train.skipped
            warnings.warn(f"{train_file.path}: {_describe_misplaced(train_examples, train.skipped_ids)}; they are "
                          "left out of training, as the official run_squad.py leaves them out.", RuntimeWarning,
                          stacklevel=2)
        if not len(train):
            raise ValueError(f"{train_file.path}: none of the {len(train_examples)} training questions has an answer "
                             "at its answer_start; nothing to train on.")
        dev = squad_features(dev_examples, tokenizer, **options)
        dataset = _only_questions(dev_file.dataset, {example.qid for example in dev_examples})
        return TaskData(self.name, train.inputs, {"start_logits": train.start_positions,
                                                  "end_logits": train.end_positions},
                        dev.inputs, None, len(train_examples),
                        {"examples": dev_examples, "features": dev, "dataset": dataset}, report)

    def build_model(self, backbone, settings):
        from bertlib.finetune.tasks.heads import BertSpanExtractor

        return BertSpanExtractor(backbone, name=f"{self.name}_span_extractor")

    def compile(self, model, optimizer, jit_compile="auto"):
        import keras

        # The released code averages the start and end cross-entropies.
        cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(optimizer=optimizer, loss={"start_logits": cross_entropy, "end_logits": cross_entropy},
                      loss_weights={"start_logits": 0.5, "end_logits": 0.5}, jit_compile=jit_compile)

    def evaluate(self, model, data, settings):
        """Scored as the official script with `--na-prob-file null_odds.json --na-prob-thresh na_prob_thresh`
        (v2.0): the result also has `best_exact`, `best_f1` and their thresholds."""
        features, examples = data.dev_extra["features"], data.dev_extra["examples"]
        logits = predict(model, data.dev_inputs, EVAL_BATCH_SIZE, trim=False)
        undefined = self.undefined_scores(logits)
        if undefined:  # NaN logits still rank some span first: no answer is honest
            return {**undefined, "total": len(examples)}, {"answers": {e.qid: "" for e in examples},
                                                           "null_score_diffs": {}}
        answers, null_score_diffs = squad_predictions(
            examples, features, logits["start_logits"], logits["end_logits"], n_best_size=settings.n_best_size,
            max_answer_length=settings.max_answer_length, version_2=self.version_2,
            null_score_diff_threshold=settings.null_score_diff_threshold)
        scores = metrics.squad_evaluate(data.dev_extra["dataset"], answers, version_2=self.version_2,
                                        na_probs=null_score_diffs if self.version_2 else None,
                                        na_prob_thresh=settings.na_prob_thresh)
        return scores, {"answers": answers, "null_score_diffs": null_score_diffs}

    def write_predictions(self, folder, predictions, data, write_text):
        write_text(folder / "predictions.json", json.dumps(predictions["answers"], indent=2) + "\n")
        if not self.version_2:
            return ["predictions.json"]
        write_text(folder / "null_odds.json", json.dumps(predictions["null_score_diffs"], indent=2) + "\n")
        return ["predictions.json", "null_odds.json"]


def _check_every_question_answered(squad):
    """SQuAD v1.1 scores every question against its answers (and trains on the first): none may have none."""
    unanswered = [example.qid for example in squad.examples if not example.answers]
    if unanswered:
        raise ValueError(
            f"{squad.path}: {len(unanswered)} of {len(squad.examples)} questions have no answers (e.g. question id "
            f"{unanswered[0]!r}). SQuAD v1.1 needs at least one answer per question; unanswerable questions are "
            "SQuAD v2.0's: use --task squad_v2. Nothing was trained.")


def _describe_misplaced(examples, qids):
    example = next(example for example in examples if example.qid == qids[0])
    answer = example.answers[0]
    start, text = answer["answer_start"], answer["text"]
    found = example.context[start:start + len(text)]
    return (f"{len(qids)} of {len(examples)} training questions have an answer that is not at its answer_start "
            f"(e.g. question id {example.qid!r}: {text!r} at {start}, where the paragraph has {found!r})")


def _only_questions(dataset, qids):
    """The SQuAD "data" list reduced to the questions in `qids` (so a dev subset is scored on itself)."""
    articles = []
    for article in dataset:
        paragraphs = [{**paragraph, "qas": [q for q in paragraph["qas"] if q["id"] in qids]}
                      for paragraph in article["paragraphs"]]
        paragraphs = [paragraph for paragraph in paragraphs if paragraph["qas"]]
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    return articles


TASKS = (SquadTask("squad_v1", version_2=False), SquadTask("squad_v2", version_2=True))
