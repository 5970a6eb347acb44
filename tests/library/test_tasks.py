"""Task loaders on the real GLUE/SQuAD files and on small files in the benchmarks' standard layouts."""

import json

import numpy as np
import pytest

from bertlib.finetune import metrics, tasks
from bertlib.text.data import default_tokenizer
from bertlib.text.tokenizer import normalize


@pytest.fixture(scope="module")
def tokenizer():
    return default_tokenizer()


# Real GLUE files: the counts of shared/data/README.md (as distributed by the GLUE download script).

@pytest.mark.parametrize("task, split, count", [
    ("sst2", "train", 67_349), ("sst2", "dev", 872), ("cola", "train", 8_551), ("cola", "dev", 1_043),
    ("stsb", "train", 5_749), ("stsb", "dev", 1_500), ("wnli", "train", 635), ("wnli", "dev", 71),
    ("qnli", "dev", 5_463)])
def test_real_glue_counts(glue_dir, task, split, count):
    examples = tasks.load_glue(task, glue_dir, split)
    assert len(examples) == len(examples.labels) == count
    assert (examples.texts_b is None) == (task in ("sst2", "cola"))


def test_real_glue_rows_match_the_raw_file(glue_dir):
    # CoLA has no header: the sentence is the 4th column, the label the 2nd.
    first = (glue_dir / "CoLA" / "dev.tsv").read_text(encoding="utf-8").splitlines()[0].split("\t")
    cola = tasks.load_glue("cola", glue_dir, "dev")
    assert cola.texts_a[0] == first[3] and cola.labels[0] == int(first[1])
    # STS-B: found by header name, scores stay floats in [0, 5].
    lines = (glue_dir / "STS-B" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    header, row = lines[0].split("\t"), lines[1].split("\t")
    stsb = tasks.load_glue("stsb", glue_dir / "STS-B", "dev")  # the task's own folder works too
    assert stsb.texts_b[0] == row[header.index("sentence2")]
    assert stsb.labels.dtype == np.float32 and stsb.labels[0] == float(row[header.index("score")])
    assert stsb.labels.min() >= 0 and stsb.labels.max() <= 5
    qnli = tasks.load_glue("qnli", glue_dir, "dev")
    assert set(qnli.labels) == {0, 1}  # entailment, not_entailment


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _tsv(*cells):
    return "\t".join(cells)


MNLI_TRAIN_HEADER = _tsv("index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                         "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label")
MNLI_DEV_HEADER = _tsv("index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                       "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "label2", "label3",
                       "label4", "label5", "gold_label")


def _mnli_row(index, premise, hypothesis, labels):
    return _tsv(str(index), "1", "1e", "fiction", "( ( x ) )", "( y )", "(ROOT x)", "(ROOT y)", premise, hypothesis,
                *labels)


@pytest.fixture
def glue_layout(tmp_path):
    """MRPC, QQP, MNLI and RTE files in the GLUE download's layout."""
    mrpc = [_tsv("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"),
            _tsv("1", "702876", "702977", "Amrozi accused his brother .", "Referring to him as the witness ."),
            _tsv("0", "2108705", "2108831", "Yucaipa owned Dominick 's .", "Yucaipa bought Dominick 's in 1995 .")]
    _write(tmp_path / "MRPC" / "train.tsv", mrpc)
    _write(tmp_path / "MRPC" / "dev.tsv", mrpc)
    _write(tmp_path / "QQP" / "train.tsv", [
        _tsv("id", "qid1", "qid2", "question1", "question2", "is_duplicate"),
        _tsv("133273", "213221", "213222", "How is the life of a math student?", "Which is the best?", "0"),
        _tsv("402555", "536040", "536041", "How do I control my horny emotions?", "How do you control it?", "1")])
    _write(tmp_path / "MNLI" / "train.tsv", [
        MNLI_TRAIN_HEADER, _mnli_row(0, "He said \"yes\".", "He agreed.", ["entailment", "entailment"]),
        _mnli_row(1, "It rained.", "It was dry.", ["contradiction", "contradiction"])])
    _write(tmp_path / "MNLI" / "dev_matched.tsv", [
        MNLI_DEV_HEADER, _mnli_row(0, "A man sleeps.", "A person rests.", ["neutral"] * 6)])
    _write(tmp_path / "MNLI" / "dev_mismatched.tsv", [
        MNLI_DEV_HEADER, _mnli_row(0, "Cats purr.", "Dogs bark.", ["neutral"] * 5 + ["contradiction"])])
    _write(tmp_path / "RTE" / "train.tsv", [
        _tsv("index", "sentence1", "sentence2", "label"),
        _tsv("0", "No Weapons of Mass Destruction Found in Iraq Yet.", "Weapons Found in Iraq.", "not_entailment")])
    return tmp_path


def test_pair_task_layouts(glue_layout):
    mrpc = tasks.load_glue("mrpc", glue_layout, "train")
    assert mrpc.texts_a[1] == "Yucaipa owned Dominick 's ." and mrpc.texts_b[0].startswith("Referring")
    assert list(mrpc.labels) == [1, 0]
    qqp = tasks.load_glue("qqp", glue_layout, "train")
    assert list(qqp.labels) == [0, 1] and qqp.texts_b[1] == "How do you control it?"
    mnli = tasks.load_glue("mnli", glue_layout, "train")
    assert mnli.texts_a[0] == 'He said "yes".'  # quotes are text in GLUE's TSVs
    labels = tasks.GLUE_TASKS["mnli"].labels
    assert [labels[i] for i in mnli.labels] == ["entailment", "contradiction"]
    assert [labels[i] for i in tasks.load_glue("mnli", glue_layout, "dev").labels] == ["neutral"]
    assert [labels[i] for i in tasks.load_glue("mnli", glue_layout, "dev_mismatched").labels] == ["contradiction"]
    rte = tasks.load_glue("rte", glue_layout, "train")
    assert rte.labels[0] == 1 and rte.texts_b[0] == "Weapons Found in Iraq."


def test_pack_examples_puts_the_pair_in_two_segments(glue_layout, tokenizer):
    examples = tasks.load_glue("mrpc", glue_layout, "train")
    packed = tasks.pack_examples(examples, tokenizer, 32)
    length_a = len(tokenizer.encode(examples.texts_a[0]))
    length_b = len(tokenizer.encode(examples.texts_b[0]))
    assert packed["token_ids"].shape == (2, 32)
    assert packed["segment_ids"][0].sum() == length_b + 1  # B and its [SEP]
    assert packed["padding_mask"][0].sum() == length_a + length_b + 3


# Bad input: each error names the file or value and what was expected.

def test_unknown_task_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown task 'sst-3'.*sst2"):
        tasks.check_task("sst-3")
    with pytest.raises(FileNotFoundError, match=r"SST-2/train.tsv"):
        tasks.load_glue("sst2", tmp_path, "train")
    with pytest.raises(FileNotFoundError, match=r"val.csv"):
        tasks.load_swag(tasks.swag_file(tmp_path, "dev"))
    with pytest.raises(FileNotFoundError, match=r"dev-v1.1.json"):
        tasks.squad_file("squad_v1", tmp_path, "dev")


def test_wrong_columns_and_labels(tmp_path):
    path = _write(tmp_path / "SST-2" / "train.tsv", [_tsv("text", "label"), _tsv("good film", "1")])
    with pytest.raises(ValueError, match=r"train.tsv has the columns \['text', 'label'\].*missing \['sentence'\]"):
        tasks.load_glue("sst2", tmp_path, "train")
    _write(path, [_tsv("sentence", "label"), _tsv("good film", "1"), _tsv("bad film", "positive")])
    with pytest.raises(ValueError, match=r"train.tsv line 3: label 'positive' is not one of \['0', '1'\]"):
        tasks.load_glue("sst2", tmp_path, "train")
    _write(tmp_path / "STS-B" / "train.tsv", [_tsv("sentence1", "sentence2", "score"), _tsv("a", "b", "7.5")])
    with pytest.raises(ValueError, match=r"line 2: score '7.5' is not a number in \[0.0, 5.0\]"):
        tasks.load_glue("stsb", tmp_path, "train")
    _write(tmp_path / "CoLA" / "train.tsv", ["gj04\t1\t\tShort row.", "gj04\t1"])
    with pytest.raises(ValueError, match=r"line 2 has 2 tab-separated columns; cola needs 4 \(the CoLA layout\)"):
        tasks.load_glue("cola", tmp_path, "train")


SWAG_HEADER = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"


def test_swag_layout_and_errors(tmp_path, tokenizer):
    path = _write(tmp_path / "train.csv", [
        SWAG_HEADER,
        ('anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street. A drum line","Members of the '
         'procession walk down the street.",A drum line,gold,passes by walking down the street playing their '
         'instruments.,has heard approaching them.,arrives and they are outside dancing.,turns the lead singer '
         'watches the performance.,0'),
        "lsmdc1052,19003,Someone grins. He,Someone grins.,He,gen,smiles.,runs.,flies.,eats.,3"])
    contexts, candidates, labels = tasks.load_swag(path)
    assert contexts[0] == "Members of the procession walk down the street."
    assert candidates[0][0] == "A drum line passes by walking down the street playing their instruments."
    assert list(labels) == [0, 3]
    packed = tasks.pack_swag(contexts, candidates, tokenizer, 24)
    assert packed["token_ids"].shape == (2, 4, 24)
    # Each choice is its own [CLS] context [SEP] ending [SEP] sequence.
    single = tokenizer.pack(contexts[1], candidates[1][2], sequence_length=24)
    np.testing.assert_array_equal(packed["token_ids"][1, 2], single["token_ids"])

    _write(path, ["sent1,sent2,ending0,ending1,label", "a,b,c,d,0"])
    with pytest.raises(ValueError, match=r"missing \['ending2', 'ending3'\]"):
        tasks.load_swag(path)
    _write(path, [SWAG_HEADER, "v,1,x,A,B,gold,e0,e1,e2,e3,4"])
    with pytest.raises(ValueError, match=r"train.csv line 2: label '4' is not one of \['0', '1', '2', '3'\]"):
        tasks.load_swag(path)


# SQuAD: offsets, windows and the mapping back to the paragraph's own characters.

def test_token_offsets_point_at_the_tokens_text(squad_dir, tokenizer):
    examples, _ = tasks.load_squad(squad_dir / "dev-v2.0-small.json")
    text = examples[0].context + " Café naïve [weird]— déjà-vu."
    tokens, offsets = tasks.tokenize_with_offsets(tokenizer, text)
    assert tokens == tokenizer.tokenize(text)  # word by word gives the same tokens as the whole text
    for token, (start, end) in zip(tokens, offsets):
        assert normalize(text[start:end]) == token.removeprefix("##")


def test_features_use_overlapping_windows_and_map_answers_back(squad_dir, tokenizer):
    examples, dataset = tasks.load_squad(squad_dir / "dev-v2.0-small.json")
    assert len(examples) == 14 and sum(example.is_impossible for example in examples) == 6
    features = tasks.squad_features(examples, tokenizer, max_seq_length=96, doc_stride=32, max_query_length=16)
    assert features.inputs["token_ids"].shape[1] == 96
    assert len(features) > len(examples)  # long paragraphs need several windows
    for example_index, example in enumerate(examples):
        rows = np.flatnonzero(features.example_index == example_index)
        paragraph = tasks.tokenize_with_offsets(tokenizer, example.context)[1]
        # Every paragraph token is in some window and is "max context" in exactly one of them.
        assert features.is_max_context[rows].sum() == len(paragraph)
        seen = {tuple(span) for row in rows for span in features.offsets[row] if span[0] >= 0}
        assert seen == {tuple(span) for span in paragraph}
        for row in rows:  # the question is cut to max_query_length tokens
            assert np.argmax(features.inputs["token_ids"][row] == tokenizer.sep_id) <= 16 + 1
        # Consecutive windows start doc_stride tokens apart.
        starts = [int(np.flatnonzero(features.offsets[row, :, 0] >= 0)[0]) for row in rows]
        firsts = [paragraph.index(tuple(features.offsets[row, start])) for row, start in zip(rows, starts)]
        assert firsts == list(range(0, 32 * len(rows), 32))
        labelled = [row for row in rows if features.start_positions[row] > 0]
        if example.is_impossible:
            assert not labelled
        for row in labelled:
            start = features.offsets[row, features.start_positions[row], 0]
            end = features.offsets[row, features.end_positions[row], 1]
            assert example.context[start:end] == example.answers[0]["text"]

    # Logits that put all mass on the labelled positions give back the gold answers: EM = F1 = 100.
    start_logits = np.full((len(features), 96), -10.0)
    end_logits = np.full((len(features), 96), -10.0)
    start_logits[np.arange(len(features)), features.start_positions] = 10.0
    end_logits[np.arange(len(features)), features.end_positions] = 10.0
    predictions, null_score_diffs = tasks.squad_predictions(examples, features, start_logits, end_logits,
                                                            version_2=True)
    assert metrics.squad_evaluate(dataset, predictions)["exact"] == 100.0
    assert all(null_score_diffs[e.qid] > 0 for e in examples if e.is_impossible)


def test_squad_errors(tmp_path):
    path = tmp_path / "dev-v2.0.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev-v2.0.json is not valid JSON"):
        tasks.load_squad(path)
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "1"}]}]}]}),
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"not in the SQuAD layout.*missing 'question'"):
        tasks.load_squad(path)


# Text in other encodings: read with a byte order mark, refused with the file, line and bytes without one ---------

SST2_ROWS = [_tsv("sentence", "label"), _tsv("a charming café film", "1"), _tsv("dull", "0")]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_glue_tsv_with_a_byte_order_mark_is_read(tmp_path, encoding):
    path = tmp_path / "SST-2" / "train.tsv"
    path.parent.mkdir()
    data = "".join(row + "\r\n" for row in SST2_ROWS).encode(encoding)
    if encoding == "utf-16-be":  # Python writes no mark for an explicit byte order: add the one a tool writes
        data = b"\xfe\xff" + data
    path.write_bytes(data)
    examples = tasks.load_glue("sst2", tmp_path, "train")
    assert examples.texts_a == ["a charming café film", "dull"] and list(examples.labels) == [1, 0]


def test_text_that_is_not_utf8_is_refused_with_the_file_line_and_bytes(tmp_path):
    path = tmp_path / "SST-2" / "train.tsv"
    path.parent.mkdir()
    path.write_bytes("".join(row + "\n" for row in SST2_ROWS).encode("cp1252"))
    with pytest.raises(ValueError, match=r"SST-2/train.tsv is not UTF-8: byte 0xe9 at line 2, column 15 "
                                         r".*'a charming caf\\\\xe9 film.*Windows-1252 or Latin-1.*iconv -f cp1252"):
        tasks.load_glue("sst2", tmp_path, "train")
    path.write_bytes("".join(row + "\n" for row in SST2_ROWS).encode("utf-16-le"))  # no byte order mark
    with pytest.raises(ValueError, match=r"train.tsv holds NUL bytes \(the first at byte 1\): UTF-16 or UTF-32 "
                                         r"text without a byte order mark"):
        tasks.load_glue("sst2", tmp_path, "train")
    swag = tmp_path / "val.csv"
    swag.write_bytes((SWAG_HEADER + "\nv,1,x,Un café,He,gold,a,b,c,d,0\n").encode("latin-1"))
    with pytest.raises(ValueError, match=r"val.csv is not UTF-8: byte 0xe9 at line 2"):
        tasks.load_swag(swag)
    swag.write_bytes((SWAG_HEADER + "\nv,1,x,Un café,He,gold,a,b,c,d,0\n").encode("utf-16"))
    assert tasks.load_swag(swag)[0] == ["Un café"]


# SQuAD input: answers not at their answer_start, UTF-16 offsets, v1.1 questions without answers, NaN outputs ------

SQUAD_CONTEXT = "Denver won the game in Santa Clara 🏈 and the Broncos took the Super Bowl title."


def _squad_file(path, questions, version_2=False):
    """A SQuAD file of one paragraph; `questions` are (id, question, answers) with answers (text, start)."""
    context = SQUAD_CONTEXT
    qas = [{"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}
                                                         for text, start in answers],
            **({"is_impossible": not answers} if version_2 else {})} for qid, question, answers in questions]
    path.write_text(json.dumps({"version": "2.0" if version_2 else "1.1",
                                "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}),
                    encoding="utf-8")
    return path, context


class _Settings:
    max_seq_length, doc_stride, max_query_length, max_train_examples, max_eval_examples, seed = 64, 32, 16, None, None, 0


def test_an_answer_not_at_its_answer_start_is_counted_named_and_left_out_of_training(tmp_path, tokenizer):
    path, _ = _squad_file(tmp_path / "train-v1.1.json", [
        ("q-good", "Who won?", [("Denver", 0)]),
        ("q-off-by-one", "Where?", [("Santa Clara", SQUAD_CONTEXT.index("Santa Clara") + 1)])])
    (tmp_path / "dev-v1.1.json").write_text(path.read_text(), encoding="utf-8")
    task = tasks.get("squad_v1")
    with pytest.warns(RuntimeWarning, match=r"train-v1.1.json: 1 of 2 training questions have an answer that is not "
                                            r"at its answer_start \(e.g. question id 'q-off-by-one': 'Santa Clara' "
                                            r"at 24, where the paragraph has 'anta Clara '\); they are left out of "
                                            r"training, as the official run_squad.py"):
        data = task.read(tmp_path, tokenizer, _Settings)
    assert data.report == {"train_questions_left_out": 1}
    assert data.train_examples == 2 and len(data.train_inputs["token_ids"]) == 1  # only q-good's window
    assert data.train_targets["start_logits"][0] > 0  # labelled, not "no answer"
    features = tasks.squad_features(tasks.load_squad(path)[0], tokenizer, max_seq_length=64, doc_stride=32,
                                    max_query_length=16)  # for prediction every question keeps its windows
    assert features.skipped_ids == ["q-off-by-one"] and set(features.example_index) == {0, 1}


def test_utf16_answer_starts_are_detected_named_and_read_as_such(tmp_path):
    context = SQUAD_CONTEXT
    start = context.index("Broncos")
    utf16_start = len(context[:start].encode("utf-16-le")) // 2  # what JavaScript's indexOf gives: one more (🏈)
    assert utf16_start == start + 1
    path, _ = _squad_file(tmp_path / "dev.json", [("q-js", "Who took the title?", [("Broncos", utf16_start)]),
                                                  ("q-py", "Who won?", [("Denver", 0)])])
    with pytest.warns(RuntimeWarning, match=r"dev.json: the answer_start of 1 question\(s\) counts UTF-16 code units, "
                                            r"as JavaScript tools write offsets.*'q-js'"):
        squad = tasks.read_squad(path)
    assert squad.utf16_offsets == ["q-js"]
    answer = squad.examples[0].answers[0]
    assert context[answer["answer_start"]:answer["answer_start"] + len("Broncos")] == "Broncos"
    assert squad.examples[1].answers[0]["answer_start"] == 0


def test_a_v11_question_without_answers_is_refused_before_training(tmp_path):
    from bertlib.finetune import finetuning

    path, _ = _squad_file(tmp_path / "dev-v1.1.json", [("q1", "Who won?", [("Denver", 0)]),
                                                        ("q-none", "Who lost?", [])])
    with pytest.raises(ValueError, match=r"dev-v1.1.json: 1 of 2 questions have no answers \(e.g. question id "
                                         r"'q-none'\).*use --task squad_v2. Nothing was trained"):
        finetuning.finetune("squad_v1", path, "tiny", max_seq_length=64, output_dir=tmp_path / "out")
    assert not any((tmp_path / "out").iterdir())
    dataset = json.loads(path.read_text())["data"]
    with pytest.raises(ValueError, match=r"v1.1 question 'q-none' has no answers"):  # not "max() arg is empty"
        metrics.squad_evaluate(dataset, {"q1": "Denver", "q-none": ""}, version_2=False)


class _NaNModel:
    def predict_on_batch(self, inputs):
        nan = np.full(inputs["token_ids"].shape, np.nan, np.float32)
        return {"start_logits": nan, "end_logits": nan}


def test_nan_span_logits_give_nan_squad_metrics(tmp_path, tokenizer):
    path, _ = _squad_file(tmp_path / "dev-v2.0.json", [("q1", "Who won?", [("Denver", 0)]),
                                                        ("q2", "Who lost?", [])], version_2=True)
    task = tasks.get("squad_v2")
    data = task.read(path, tokenizer, _Settings)

    class Evaluation(_Settings):
        n_best_size, max_answer_length, null_score_diff_threshold, na_prob_thresh = 20, 30, 0.0, 1.0

    with pytest.warns(RuntimeWarning, match="outputs hold .* NaN or infinite values; the squad_v2 metrics are NaN"):
        scores, predictions = task.evaluate(_NaNModel(), data, Evaluation)
    assert np.isnan(scores["exact"]) and np.isnan(scores["f1"]) and scores["total"] == 2
    assert predictions["answers"] == {"q1": "", "q2": ""}
