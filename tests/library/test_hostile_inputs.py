"""Issue 15: real files that failed, bad input that got a traceback or a wrong answer, and the references'
edge cases (scipy, the official SQuAD scripts, the checkpoint's tokenizer.json). Each test here failed on the
code before the fix."""

import collections
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from bertlib.finetune import metrics, tasks
from tools.repo_paths import REPO_ROOT

BOM = "\ufeff"


# Real data: byte order marks -----------------------------------------------------------------------------------

def test_glue_tsv_with_a_byte_order_mark_reads(tmp_path):
    # The MRPC train.tsv of the GLUE download starts with a UTF-8 BOM.
    folder = tmp_path / "MRPC"
    folder.mkdir()
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    rows = "1\t1\t2\tThe cat sat.\tA cat sat.\n0\t3\t4\tIt rained.\tThe sun shone.\n"
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text(BOM + header + rows, encoding="utf-8")
    examples = tasks.load_glue("mrpc", tmp_path, "train")
    assert examples.texts_a == ["The cat sat.", "It rained."]
    assert examples.labels.tolist() == [1, 0]


def test_squad_json_swag_csv_and_vocab_with_a_byte_order_mark_read(tmp_path):
    squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Paris is big.", "qas": [
        {"id": "q1", "question": "What?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}
    (tmp_path / "s.json").write_text(BOM + json.dumps(squad), encoding="utf-8")
    examples, _ = tasks.load_squad(tmp_path / "s.json")
    assert examples[0].qid == "q1"

    (tmp_path / "val.csv").write_text(BOM + "sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                                      "A man,He,runs,sits,eats,sleeps,2\n", encoding="utf-8")
    contexts, _, labels = tasks.load_swag(tmp_path / "val.csv")
    assert contexts == ["A man"] and labels.tolist() == [2]

    from bertlib.text.tokenizer import WordPieceTokenizer

    (tmp_path / "vocab.txt").write_text(BOM + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncat\n", encoding="utf-8")
    tokenizer = WordPieceTokenizer.from_vocab_file(tmp_path / "vocab.txt")
    assert tokenizer.pad_id == 0 and tokenizer.encode("cat") == [5]


# Metrics: NaN is loud, as scipy ---------------------------------------------------------------------------------

@pytest.mark.parametrize("predictions", [[1.0, float("nan"), 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]],
                         ids=["nan", "constant"])
def test_correlations_are_nan_with_a_warning_where_scipy_gives_nan(predictions):
    labels = [1.0, 2.0, 3.0, 5.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(scipy.stats.pearsonr(labels, predictions)[0])
        assert math.isnan(scipy.stats.spearmanr(labels, predictions)[0])
    for metric in (metrics.pearson, metrics.spearman):
        with pytest.warns(RuntimeWarning, match="undefined"):
            assert math.isnan(metric(labels, predictions))
    with pytest.warns(RuntimeWarning):
        scores = metrics.compute_metrics("stsb", labels, predictions)
    assert metrics.selection_score("stsb", scores) == -math.inf  # a NaN run never wins a grid search


# SQuAD scoring: the official scripts' edge cases ----------------------------------------------------------------

def _squad(questions, impossible_key=True):
    qas = []
    for qid, answers in questions:
        question = {"id": qid, "question": "q?", "answers": [{"text": t, "answer_start": 0} for t in answers]}
        if impossible_key:
            question["is_impossible"] = not answers
        qas.append(question)
    return [{"title": "t", "paragraphs": [{"context": "ctx", "qas": qas}]}]


def _official_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """evaluate-v2.0.py's main_eval, re-derived step by step from the official script (a reference)."""
    qas = [qa for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    has_ans = {qa["id"]: bool(qa["answers"]) for qa in qas}
    exact_raw, f1_raw = {}, {}
    for qa in qas:
        golds = [a["text"] for a in qa["answers"] if metrics.normalize_answer(a["text"])] or [""]
        if qa["id"] not in predictions:
            continue  # the official script prints "Missing prediction" and skips it
        pred = predictions[qa["id"]]
        exact_raw[qa["id"]] = max(int(metrics.normalize_answer(g) == metrics.normalize_answer(pred))
                                  for g in golds)

        def f1(gold, pred=pred):
            gold_toks, pred_toks = metrics.normalize_answer(gold).split(), metrics.normalize_answer(pred).split()
            if not gold_toks or not pred_toks:
                return int(gold_toks == pred_toks)
            same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
            if same == 0:
                return 0
            precision, recall = same / len(pred_toks), same / len(gold_toks)
            return 2 * precision * recall / (precision + recall)

        f1_raw[qa["id"]] = max(f1(g) for g in golds)
    probs = na_probs if na_probs is not None else {k: 0.0 for k in predictions}

    def thresholded(scores):
        return {qid: float(not has_ans[qid]) if probs[qid] > na_prob_thresh else s for qid, s in scores.items()}

    exact, f1s = thresholded(exact_raw), thresholded(f1_raw)

    def summary(qids):
        return {"exact": 100.0 * sum(exact[k] for k in qids) / len(qids),
                "f1": 100.0 * sum(f1s[k] for k in qids) / len(qids), "total": len(qids)}

    out = summary(list(exact))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [k for k, v in has_ans.items() if v == wanted]
        if qids:
            out.update({f"{prefix}_{k}": v for k, v in summary(qids).items()})
    if na_probs is not None:
        for name, scores in (("exact", exact_raw), ("f1", f1_raw)):
            cur = best = sum(1 for k in has_ans if not has_ans[k])
            best_thresh = 0.0
            for qid in sorted(na_probs, key=lambda k: na_probs[k]):
                if qid not in scores:
                    continue
                diff = scores[qid] if has_ans[qid] else (-1 if predictions[qid] else 0)
                cur += diff
                if cur > best:
                    best, best_thresh = cur, na_probs[qid]
            out[f"best_{name}"], out[f"best_{name}_thresh"] = 100.0 * best / len(scores), best_thresh
    return out


def test_squad_v2_reports_has_ans_and_counts_a_gold_that_normalizes_to_empty_as_answerable():
    dataset = _squad([("q1", ["The"]), ("q2", ["Paris"]), ("q3", ["."])])  # all answerable, v2.0 file
    predictions = {"q1": "", "q2": "Paris", "q3": "x"}
    result = metrics.squad_evaluate(dataset, predictions)
    assert result == pytest.approx(_official_v2(dataset, predictions))
    assert result["HasAns_total"] == 3 and "NoAns_total" not in result
    # "The" and "." normalize to "": the gold becomes "" so the empty prediction scores 1, "x" scores 0.
    assert result["exact"] == pytest.approx(200 / 3)


def test_squad_v1_empty_prediction_against_the_scores_as_the_official_v1_script():
    # evaluate-v1.1.py: exact_match compares normalized strings ("" == ""), f1_score counts common tokens
    # (none) and returns 0. The v2.0 rule "both empty is a match" is not in v1.1.
    dataset = _squad([("q1", ["The"]), ("q2", ["Paris"])], impossible_key=False)
    result = metrics.squad_evaluate(dataset, {"q1": "", "q2": "Paris"})
    assert result["exact"] == pytest.approx(100.0)
    assert result["f1"] == pytest.approx(50.0)
    assert "HasAns_exact" not in result


def test_squad_v2_no_answer_threshold_and_best_thresholds_match_the_official_script():
    rng = np.random.default_rng(0)
    golds = [["Paris", "the Paris"], [], ["Rome"], [], ["blue sky"], ["The"], ["x y z"], []]
    for trial in range(30):
        questions = [(f"q{i}", gold) for i, gold in enumerate(golds)]
        dataset = _squad(questions)
        choices = ["", "Paris", "Rome", "blue", "sky blue", "x z", "the"]
        predictions = {qid: choices[rng.integers(len(choices))] for qid, _ in questions}
        na_probs = {qid: float(rng.choice([rng.normal(), 0.5])) for qid, _ in questions}  # ties too
        threshold = float(rng.choice([1.0, 0.0, -0.5]))
        result = metrics.squad_evaluate(dataset, predictions, na_probs=na_probs, na_prob_thresh=threshold)
        assert result == pytest.approx(_official_v2(dataset, predictions, na_probs, threshold)), trial
    # By hand: q1 "Paris" right (na 0.1), q2 no answer predicted "x" (na 0.9). Threshold 0.5: q2 is taken
    # as "no answer" -> exact 100. Best threshold: answer nothing = 1/2; answer q1 too (thresh 0.1) = 2/2.
    dataset = _squad([("q1", ["Paris"]), ("q2", [])])
    result = metrics.squad_evaluate(dataset, {"q1": "Paris", "q2": "x"}, na_probs={"q1": 0.1, "q2": 0.9},
                                    na_prob_thresh=0.5)
    assert result["exact"] == 100.0 and result["best_exact"] == 100.0 and result["best_exact_thresh"] == 0.1


# Masking: the prediction budget of the original create_pretraining_data.py --------------------------------------

def test_masking_rate_zero_selects_nothing_and_the_budget_is_the_originals():
    from bertlib.text.masking import MaskedLMMasker, mask_tokens_loop

    cls, sep, mask = 101, 102, 103
    specials = [0, 100, cls, sep, mask]
    row = np.array([[cls, *range(2000, 2009), sep, 0, 0, 0]])  # 9 words + [CLS] + [SEP], then padding
    for masker in (MaskedLMMasker(30522, mask, specials, selection_rate=0.0, seed=0),
                   MaskedLMMasker(30522, mask, specials, selection_rate=0.0, whole_word=True,
                                  continuation_token_ids=[], seed=0)):
        masked = masker(row)
        assert masked["mask_weights"].sum() == 0
        np.testing.assert_array_equal(masked["token_ids"], row)
    silent = MaskedLMMasker(30522, mask, specials, selection_rate=0.0, seed=0)
    assert np.asarray(mask_tokens_loop(row, silent, np.random.default_rng(0))["mask_weights"]).sum() == 0

    # create_pretraining_data.py's budget, min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
    # over the whole instance, [CLS] and [SEP] included, is round(11 * 0.15) = 2 here, where counting only the 9
    # tokens that can be predicted would give round(1.35) = 1. bertlib follows the original.
    original_budget = min(20, max(1, int(round(11 * 0.15))))
    masker = MaskedLMMasker(30522, mask, specials, max_predictions=20, seed=0)
    assert masker(row)["mask_weights"].sum() == original_budget == 2


# Tokenizer: offsets as the checkpoint's tokenizer.json, and the references' options -----------------------------

OFFSET_TEXTS = [
    "hello, \u2603! x[MASK]y",  # [UNK] for one character; a special token glued to text
    "x  [UNK] [SEP]y[CLS]",
    "Caf\u00e9 d\u00e9j\u00e0-vu \ufb01ne \u0130stanbul na\u00efve",
    "a\u200bb c\x00d e\u2028f g\x85h i\u00a0j k\ufffdl",  # format, control, separator characters
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587abc",
    "\u039f\u0394\u039f\u03a3 foo\u2603bar \u0300abc a\u0301\u0302 b",
    "A " + "x" * 120 + " word",  # a word over 100 characters is [UNK]
]


def _hf_tokenizer(minilm_dir):
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    reference.no_padding()
    reference.no_truncation()
    return reference


def _random_texts(count, seed=0):
    rng = np.random.default_rng(seed)
    alphabet = list("abcXYZ019 .,'-()") + ["\u00e9", "\u0301", "\u4e2d", "\u2603", "\x00", "\u200b", "\u2028",
                                           "\x85", "\t", "\u3000", "\u0130", "\u03a3", "\ufffd", "[MASK]",
                                           "[SEP]", "##", "\U0001f600", "\u00df", "\ufb01"]
    return ["".join(rng.choice(alphabet, size=rng.integers(1, 40))) for _ in range(count)]


def test_tokenize_with_offsets_matches_tokenizer_json(minilm_dir):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    reference = _hf_tokenizer(minilm_dir)
    for text in OFFSET_TEXTS + _random_texts(400):
        expected = reference.encode(text, add_special_tokens=False)
        tokens, offsets = tasks.tokenize_with_offsets(tokenizer, text)
        assert tokens == expected.tokens, text
        assert offsets == [tuple(span) for span in expected.offsets], text
        assert [tokenizer.token_to_id(token) for token in tokens] == tokenizer.encode(text), text


def _hf_with_options(minilm_dir, lowercase, strip_accents, split_cjk, never_split=()):
    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers

    vocabulary = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    reference = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocabulary)}, unk_token="[UNK]"))
    reference.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=split_cjk,
                                                      strip_accents=strip_accents, lowercase=lowercase)
    reference.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    reference.add_special_tokens([AddedToken(t, normalized=False) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                                             "[MASK]", *never_split)])
    return reference


@pytest.mark.parametrize("lowercase, strip_accents, split_cjk", [(False, True, True), (True, False, True),
                                                                  (True, None, False), (False, False, False)])
def test_tokenizer_options_match_the_reference_normalizer(minilm_dir, lowercase, strip_accents, split_cjk):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt", lowercase=lowercase,
                                                   strip_accents=strip_accents, split_cjk=split_cjk,
                                                   never_split=["..."])
    reference = _hf_with_options(minilm_dir, lowercase, strip_accents, split_cjk, never_split=["..."])
    for text in OFFSET_TEXTS + _random_texts(150, seed=1) + ["wait... what", "R\u00e9sum\u00e9 \u4e2d\u6587"]:
        expected = reference.encode(text, add_special_tokens=False)
        assert tokenizer.tokenize(text) == expected.tokens, text
        assert tokenizer.encode_batch([text])[0] == expected.ids, text
        tokens, offsets = tokenizer.tokenize_with_offsets(text)
        assert (tokens, offsets) == (expected.tokens, [tuple(span) for span in expected.offsets]), text


def test_never_split_keeps_a_token_whole_and_unknown_ones_become_unk(minilm_dir):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt", never_split=["...", "c++"])
    assert tokenizer.tokenize("wait...c++ now") == ["wait", "...", "[UNK]", "now"]
    assert tokenizer.encode_batch(["wait...c++ now"])[0] == tokenizer.encode("wait...c++ now")
    plain = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    assert plain.tokenize("wait...") == ["wait", ".", ".", "."]
    assert plain.tokenize("\u4e2d\u6587") == ["\u4e2d", "\u6587"]
    no_cjk = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt", split_cjk=False)
    assert no_cjk.tokenize("\u4e2d\u6587") == ["\u4e2d", "##\u6587"]


def test_convert_tokens_to_ids_maps_unknown_tokens_to_unk(minilm_dir):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    assert tokenizer.convert_tokens_to_ids(["the", "notatoken!!", "[MASK]"]) == [
        tokenizer.token_to_id("the"), tokenizer.unk_id, tokenizer.mask_id]
    assert tokenizer.convert_tokens_to_ids("notatoken!!") == tokenizer.unk_id


# Bad values that used to pass silently --------------------------------------------------------------------------

@pytest.mark.timeout(60)  # the old code looped forever here
def test_squad_doc_stride_zero_or_negative_is_refused_instead_of_looping(minilm_dir):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    example = tasks.SquadExample("q1", "Who?", "word " * 300, [{"text": "word", "answer_start": 0}])
    for stride in (0, -5):
        with pytest.raises(ValueError, match="doc_stride"):
            tasks.squad_features([example], tokenizer, max_seq_length=64, doc_stride=stride, max_query_length=16)


def test_config_and_optimizer_refuse_values_of_the_wrong_kind():
    from bertlib.model.config import BertConfig
    from bertlib.train.schedule import make_optimizer

    with pytest.raises(ValueError, match="causal"):
        BertConfig(causal="yes")
    with pytest.raises(ValueError, match="dropout"):
        BertConfig(dropout="0.1")
    with pytest.raises(ValueError, match="weight_decay"):
        make_optimizer(1e-4, 10, 100, weight_decay=-0.01)


def _tiny_backbone():
    from bertlib.model import BertBackbone
    from bertlib.model.config import BertConfig

    return BertBackbone(BertConfig(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                   vocabulary_size=50, max_sequence_length=16))


def test_backbone_refuses_out_of_range_ids_mismatched_batches_and_too_long_sequences():
    backbone = _tiny_backbone()
    good = {"token_ids": np.ones((2, 8), np.int32), "segment_ids": np.zeros((2, 8), np.int32),
            "padding_mask": np.ones((2, 8), np.int32)}
    assert backbone(good)["sequence_output"].shape == (2, 8, 16)
    for token_id in (-1, 50):
        bad = dict(good, token_ids=np.full((2, 8), token_id, np.int32))
        with pytest.raises(ValueError, match="token_ids"):
            backbone(bad)
    with pytest.raises(ValueError, match="segment_ids"):
        backbone(dict(good, segment_ids=np.full((2, 8), 2, np.int32)))
    with pytest.raises(ValueError, match="padding_mask"):
        backbone(dict(good, padding_mask=np.ones((1, 8), np.int32)))  # would broadcast onto both rows
    long = {name: np.ones((1, 17), np.int32) for name in good}
    with pytest.raises(ValueError, match="17 tokens"):
        backbone(long)


def test_hf_config_listing_fewer_layers_than_its_weights_is_refused(tmp_path):
    from bertlib.model import BertBackbone
    from bertlib.model.checkpoint import load_hf_checkpoint, save_hf_checkpoint
    from bertlib.model.config import BertConfig

    two_layers = BertBackbone(BertConfig(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                         vocabulary_size=50, max_sequence_length=16))
    save_hf_checkpoint(two_layers, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["num_hidden_layers"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="num_hidden_layers=1"):
        load_hf_checkpoint(tmp_path)


# finetune: outputs are never overwritten silently, never lost, and a seed reproduces a run ---------------------

def test_finetune_refuses_a_non_empty_output_dir_before_any_work(tmp_path):
    from bertlib.finetune import finetune

    (tmp_path / "metrics.json").write_text("{}")
    with pytest.raises(ValueError, match="not empty.*--overwrite"):
        # the data folder does not exist: the output check must come first, before data or model
        finetune("sst2", tmp_path / "no-such-data", "tiny", output_dir=tmp_path)
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        finetune("sst2", tmp_path / "no-such-data", "tiny", output_dir=afile)
    with pytest.raises(ValueError, match="cannot be written"):
        finetune("sst2", tmp_path / "no-such-data", "tiny", output_dir=afile / "below")


def test_finetune_refuses_doc_stride_zero_before_loading_anything(tmp_path):
    from bertlib.finetune import finetune

    with pytest.raises(ValueError, match="doc_stride"):
        finetune("squad_v2", tmp_path / "no-such-data", "tiny", doc_stride=0)


def test_an_output_folder_with_earlier_outputs_is_refused_unless_overwrite(tmp_path):
    """`bertlib data --out` and `bertlib finetune --output-dir` share one check (bertlib.io.files)."""
    from bertlib.io import files

    folder = tmp_path / "out"
    assert files.check_output_dir(folder, "--out") == folder and folder.is_dir()  # created when missing
    (folder / "notes.txt").write_text("mine")
    assert files.check_output_dir(folder, "--out", earlier="*.tfrecord") == folder  # not a shard: kept, allowed
    (folder / "shard-00000.tfrecord").write_text("old")
    with pytest.raises(ValueError, match=r"--out .* is not empty: it already holds \['shard-00000.tfrecord'\].*--overwrite.*"
                                         r"Nothing was trained\."):
        files.check_output_dir(folder, "--out", earlier="*.tfrecord", consequence="Nothing was trained.")
    with pytest.raises(ValueError, match=r"already holds \['notes.txt', 'shard-00000.tfrecord'\]"):
        files.check_output_dir(folder, "--output-dir")
    assert files.check_output_dir(folder, "--output-dir", overwrite=True) == folder
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="--out .*afile is a file; expected a folder"):
        files.check_output_dir(tmp_path / "afile", "--out", overwrite=True)


def test_overwrite_clears_the_previous_runs_files_and_a_failed_write_lands_elsewhere(tmp_path):
    from bertlib.finetune import finetuning as finetune_module
    from bertlib.finetune.tasks import TaskData
    from bertlib.io import files

    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("dev_predictions.tsv", "dev_mismatched_predictions.tsv", "metrics.json", "notes.txt"):
        (folder / name).write_text("old")
    assert files.check_output_dir(folder, "--output-dir", overwrite=True) == folder

    class Model:
        def save(self, path):
            open(path, "w").write("model")

    class Tokenizer:
        vocabulary = ["[PAD]", "[UNK]"]

    data = TaskData("squad_v1", {}, None, {}, None, 0)
    finetune_module.save_outputs(folder, "squad_v1", Model(), Tokenizer(), {"exact": 1.0},
                                 {"answers": {"q": "a"}}, data)
    assert sorted(p.name for p in folder.iterdir()) == ["metrics.json", "model.keras", "notes.txt",
                                                         "predictions.json", "vocab.txt"]

    def write(target):
        target = Path(target)
        if target == gone:
            raise PermissionError(13, "Permission denied", str(target))
        (target / "metrics.json").write_text("{}")

    gone = tmp_path / "gone"
    with pytest.warns(RuntimeWarning, match="saved in"):
        written = finetune_module.write_with_fallback(gone, "sst2", write)
    assert written != gone and (written / "metrics.json").is_file()


def test_seed_fixes_the_initial_weights_of_a_preset_init():
    from bertlib.finetune import load_init

    first = load_init("tiny", seed=3)[0].get_weights()
    second = load_init("tiny", seed=3)[0].get_weights()
    other = load_init("tiny", seed=4)[0].get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


# bertlib data: bad input gets a clear error, not a traceback ------------------------------------------------------

def _data_corpora(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("One sentence here.\nAnother one.\n\nA second document.\nWith two lines.\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02abc\x00" * 20)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\u00e9 cr\u00e8me.\n".encode("latin-1"))
    afile = tmp_path / "afile"
    afile.write_text("x")
    return good, empty, binary, latin1, afile


@pytest.mark.parametrize("case", ["missing corpus", "empty corpus", "binary corpus", "latin-1 corpus",
                                  "seq length 0", "seq length 1", "seq length 100000", "zero shards",
                                  "out is a file", "missing vocab", "negative dupe factor", "short prob 2"])
def test_bertlib_data_bad_inputs_end_in_a_clear_error(tmp_path, capsys, case):
    from bertlib import cli

    good, empty, binary, latin1, afile = _data_corpora(tmp_path)
    out = str(tmp_path / "out")
    argv = {"missing corpus": ["--corpus", str(tmp_path / "nope.txt")],
            "empty corpus": ["--corpus", str(empty)],
            "binary corpus": ["--corpus", str(binary)],
            "latin-1 corpus": ["--corpus", str(latin1)],
            "seq length 0": ["--corpus", str(good), "--max-seq-length", "0"],
            "seq length 1": ["--corpus", str(good), "--max-seq-length", "1"],
            "seq length 100000": ["--corpus", str(good), "--max-seq-length", "100000"],
            "zero shards": ["--corpus", str(good), "--num-shards", "0"],
            "out is a file": ["--corpus", str(good)],
            "missing vocab": ["--corpus", str(good), "--vocab", str(tmp_path / "vocab.txt")],
            "negative dupe factor": ["--corpus", str(good), "--dupe-factor", "-1"],
            "short prob 2": ["--corpus", str(good), "--short-seq-prob", "2"]}[case]
    out = str(afile) if case == "out is a file" else out
    assert cli.main(["data", *argv, "--out", out]) == 2
    error = capsys.readouterr().err
    assert error.startswith("bertlib data: error:") and "Traceback" not in error
    named = {"missing corpus": "nope.txt", "empty corpus": "no text", "binary corpus": "binary",
             "latin-1 corpus": "not UTF-8", "seq length 0": "--max-seq-length 0",
             "seq length 1": "--max-seq-length 1", "seq length 100000": "--max-seq-length 100000",
             "zero shards": "--num-shards 0", "out is a file": "is a file", "missing vocab": "--vocab",
             "negative dupe factor": "--dupe-factor -1", "short prob 2": "--short-seq-prob 2"}[case]
    assert named in error


# pretrain: any checkpoint interval, a damaged checkpoint is skipped, a different run is refused ----------------

@pytest.fixture(scope="module")
def tiny_pretraining(tmp_path_factory):
    from tests.library.test_training import CORPUS_WORDS, SMALL_RUN, write_corpus_and_vocabulary

    folder = tmp_path_factory.mktemp("pretrain15")
    corpus, vocab = write_corpus_and_vocabulary(folder, CORPUS_WORDS.split())
    settings = {**SMALL_RUN, "corpus": str(corpus), "vocab": str(vocab), "verbose": False}
    return folder, settings


@pytest.fixture(scope="module")
def first_run(tiny_pretraining):
    """12 steps, logging every 4 and checkpointing every 6: the checkpoints of steps 6 and 12."""
    from bertlib.train import pretraining

    folder, settings = tiny_pretraining
    settings = {**settings, "log_every": 4, "checkpoint_every": 6}
    result = pretraining.pretrain(steps=12, checkpoint_dir=folder / "run", **settings)
    return folder / "run", settings, result


def test_checkpoint_every_need_not_be_a_multiple_of_log_every(first_run):
    checkpoint_dir, _, result = first_run
    assert sorted(path.name for path in checkpoint_dir.glob("ckpt-*.npz")) == ["ckpt-00000006.npz",
                                                                              "ckpt-00000012.npz"]
    assert result["step"] == 12 and [record["step"] for record in result["history"]] == [2, 4, 6, 8, 10, 12]


def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(first_run, tmp_path, capfd):
    import shutil

    from bertlib.train import callbacks, pretraining

    checkpoint_dir, settings, result = first_run
    run = tmp_path / "run"
    shutil.copytree(checkpoint_dir, run)
    state = callbacks.read_latest(run)
    newest = run / "ckpt-00000012.npz"
    intact = newest.read_bytes()
    flipped = bytearray(intact)
    flipped[len(flipped) // 2] ^= 0x10
    for damaged in (intact[: len(intact) // 3], b"", bytes(flipped)):  # truncated, empty, one bit flipped
        newest.write_bytes(damaged)
        restored, skipped = callbacks.restore_newest_loadable(run, result["pretrainer"], state)
        assert restored["step"] == 6 and restored["checkpoint"] == "ckpt-00000006.npz"
        assert [name for name, _ in skipped] == ["ckpt-00000012.npz"]

    newest.write_bytes(intact[:1000])  # and through pretrain(): it resumes at step 6 and says why
    resumed = pretraining.pretrain(steps=18, change_steps=True, checkpoint_dir=run, **settings)
    assert resumed["resumed_from"] == 6 and resumed["step"] == 18
    assert "ckpt-00000012.npz could not be read" in capfd.readouterr().err


@pytest.mark.parametrize("change", ["learning_rate", "seq_length", "corpus"])
def test_resuming_with_a_different_corpus_rate_or_length_is_refused(first_run, tmp_path, change):
    import shutil

    from bertlib.train import pretraining

    checkpoint_dir, settings, _ = first_run
    shutil.copy(checkpoint_dir / "latest.json", tmp_path / "latest.json")  # the check reads only this
    other_corpus = tmp_path / "other.txt"
    other_corpus.write_text(Path(settings["corpus"]).read_text())
    changed = {"learning_rate": {"learning_rate": 5e-4}, "seq_length": {"seq_length": 64},
               "corpus": {"corpus": str(other_corpus)}}[change]
    with pytest.raises(ValueError, match=f"different run \\({change.replace('seq_length', 'seq_lengths')}"):
        pretraining.pretrain(steps=24, checkpoint_dir=tmp_path, **{**settings, **changed})


def test_pretrain_refuses_sequences_longer_than_the_position_table_and_unwritable_folders(tiny_pretraining,
                                                                                        tmp_path):
    from bertlib.train import pretraining

    _, settings = tiny_pretraining
    with pytest.raises(ValueError, match="100000 is more than the model's 512"):
        pretraining.pretrain(steps=5, **{**settings, "seq_length": 100_000})
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        pretraining.pretrain(steps=5, checkpoint_dir=afile, **settings)
    with pytest.raises(ValueError, match="weight_decay"):
        pretraining.pretrain(steps=5, **{**settings, "weight_decay": -0.1})


# Issue 38: library-side bad inputs -------------------------------------------------------------------------------

def _run_python(script, timeout=300, **kwargs):
    import os
    import subprocess
    import sys
    import textwrap

    env = {**os.environ, "PYTHONWARNINGS": "always"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=timeout, env=env, **kwargs)


@pytest.mark.timeout(600)
def test_a_process_that_imports_bertlib_layers_first_saves_and_loads_a_backbone(tmp_path):
    # A process whose first bertlib import is a submodule still registers every class (bertlib/__init__ runs
    # first and imports them): a BertBackbone saved elsewhere loads there, with no warning.
    script = f"""
        import bertlib.model.layers  # the first bertlib import of the process
        import keras
        import numpy as np
        from tests.library.test_hostile_inputs import _tiny_backbone

        path = {str(tmp_path / "backbone.keras")!r}
        inputs = {{"token_ids": np.arange(8, dtype="int32")[None], "segment_ids": np.zeros((1, 8), "int32"),
                  "padding_mask": np.ones((1, 8), "int32")}}
        if {{mode!r}} == "save":
            backbone = _tiny_backbone()
            np.save(path + ".npy", keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"]))
            backbone.save(path)
        else:
            loaded = keras.saving.load_model(path)
            got = keras.ops.convert_to_numpy(loaded(inputs)["sequence_output"])
            np.testing.assert_allclose(got, np.load(path + ".npy"), atol=1e-6)
            print("loaded", type(loaded).__name__)
        """
    for mode in ("save", "load"):  # two fresh processes: the loading one never imports bertlib.model itself
        done = _run_python(script.replace("{mode!r}", repr(mode)), cwd=REPO_ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "could not register" not in done.stderr
    assert "loaded BertBackbone" in done.stdout


@pytest.mark.parametrize("name, value", [("token_ids", np.ones((2, 8), bool)),
                                         ("token_ids", np.full((2, 8), 1.7, np.float32)),
                                         ("token_ids", np.ones((2, 8), np.float64)),
                                         ("segment_ids", np.zeros((2, 8), bool)),
                                         ("segment_ids", np.zeros((2, 8), np.float32))],
                         ids=["bool ids", "fractional ids", "integral float ids", "bool segments", "float segments"])
def test_backbone_refuses_ids_that_are_not_integers(name, value):
    backbone = _tiny_backbone()
    good = {"token_ids": np.ones((2, 8), np.int32), "segment_ids": np.zeros((2, 8), np.int32),
            "padding_mask": np.ones((2, 8), np.int32)}
    with pytest.raises(ValueError, match=f"{name} is a {value.dtype} array; expected integer ids"):
        backbone(dict(good, **{name: value}))
    for dtype in (np.int64, np.uint8):  # every integer type is still taken
        assert backbone(dict(good, **{name: value.astype(dtype)}))["sequence_output"].shape == (2, 8, 16)


def test_padding_masks_other_than_zero_and_one_are_refused_where_their_values_are_known():
    import keras
    import tensorflow as tf

    from bertlib.model.layers import TransformerEncoderBlock

    backbone = _tiny_backbone()
    good = {"token_ids": np.arange(1, 17, dtype=np.int32).reshape(2, 8), "segment_ids": np.zeros((2, 8), np.int32),
            "padding_mask": np.array([[1] * 8, [1] * 5 + [0] * 3], np.int32)}
    expected = keras.ops.convert_to_numpy(backbone(good)["sequence_output"])
    block = TransformerEncoderBlock(2, 32)
    x = np.random.default_rng(0).normal(size=(2, 8, 16)).astype(np.float32)
    for bad_value in (np.nan, 0.5, 2.0, -1.0):
        mask = good["padding_mask"].astype(np.float32)
        mask[1, 2] = bad_value
        with pytest.raises(ValueError, match=f"padding_mask holds 1 value.*not 0 or 1, e.g. {bad_value}"):
            backbone(dict(good, padding_mask=mask))
        with pytest.raises(ValueError, match="padding_mask holds 1 value"):
            block(x, padding_mask=mask)  # the layers themselves, as the pretrainer calls them
    with pytest.raises(ValueError, match="padding_mask holds 16 value.*e.g. 2;.*int32"):
        backbone(dict(good, padding_mask=np.full((2, 8), 2, np.int32)))
    for mask in (good["padding_mask"].astype(np.float32), good["padding_mask"].astype(bool)):  # still taken
        np.testing.assert_allclose(keras.ops.convert_to_numpy(backbone(dict(good, padding_mask=mask))
                                                              ["sequence_output"]), expected, atol=1e-5)
        block(x, padding_mask=mask)
    # A compiled call cannot see the values: it is not refused, and gives the eager numbers.
    traced = tf.function(lambda inputs: backbone(inputs)["sequence_output"])
    float_mask = dict(good, padding_mask=good["padding_mask"].astype(np.float32))
    np.testing.assert_allclose(traced(float_mask).numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(backbone.predict(float_mask, verbose=0)["sequence_output"], expected, atol=1e-5)


@pytest.mark.parametrize("ids, error, named", [([2023.7], TypeError, "2023.7 \\(float\\)"),
                                               ([True, 2023], TypeError, "True \\(bool\\)"),
                                               (np.array([1, 0], bool), TypeError, "True \\(bool\\)"),
                                               (["2023"], TypeError, "'2023' \\(str\\)"),
                                               (np.array(["7"]), TypeError, "'7' \\(str\\)"),
                                               ([float("nan")], TypeError, "nan"),
                                               ([2023, -1], IndexError, "-1 is outside the vocabulary"),
                                               ([30522], IndexError, "30522 is outside the vocabulary")],
                         ids=["fraction", "bool", "bool array", "str", "str array", "nan", "negative", "past end"])
def test_decode_refuses_what_is_not_an_id(minilm_dir, ids, error, named):
    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    with pytest.raises(error, match=named):
        tokenizer.decode(ids)
    with pytest.raises(error, match=named):
        tokenizer.id_to_token(np.asarray(ids, dtype=object)[-1] if error is IndexError else ids[0])


def test_decode_takes_integer_ids_of_any_kind(minilm_dir):
    import tensorflow as tf

    from bertlib.text.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_file(minilm_dir / "vocab.txt")
    ids = tokenizer.encode("this is a test")
    text = "this is a test"
    for given in (ids, np.asarray(ids, np.int32), np.asarray([ids], np.int64), np.asarray(ids, np.float32),
                  [np.int64(i) for i in ids], tf.constant(ids)):
        assert tokenizer.decode(given) == text
    assert tokenizer.id_to_token(np.int64(ids[0])) == "this"


def _mrpc_folder(tmp_path, rows):
    folder = tmp_path / "MRPC"
    folder.mkdir(exist_ok=True)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text(header + "".join(rows), encoding="utf-8")
    return tmp_path


def test_a_glue_row_with_a_tab_inside_a_sentence_is_refused_with_its_file_and_line(tmp_path):
    good = "1\t1\t2\tThe cat sat.\tA cat sat.\n"
    tabbed = "0\t3\t4\tIt rained\tall day.\tThe sun shone.\n"  # 6 fields: the second sentence would be "all day."
    _mrpc_folder(tmp_path, [good, "\n", tabbed])
    with pytest.raises(ValueError, match=r"MRPC/train.tsv line 4 has 6 tab-separated columns; mrpc needs 5 "
                                         r"\(as many as the header on line 1\)"):
        tasks.load_glue("mrpc", tmp_path, "train")
    _mrpc_folder(tmp_path, [good, "0\t3\t4\tIt rained.\n"])  # and a row too short
    with pytest.raises(ValueError, match=r"line 3 has 4 tab-separated columns; mrpc needs 5"):
        tasks.load_glue("mrpc", tmp_path, "dev")
    cola = tmp_path / "CoLA"
    cola.mkdir()
    (cola / "train.tsv").write_text("gj04\t1\t\tA fine row.\ngj04\t1\t\tA row\twith a tab.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"CoLA/train.tsv line 2 has 5 tab-separated columns; cola needs 4"):
        tasks.load_glue("cola", tmp_path, "train")
    _mrpc_folder(tmp_path, [good, "0\t3\t4\tIt rained.\tThe sun shone.\n"])
    assert tasks.load_glue("mrpc", tmp_path, "train").texts_b == ["A cat sat.", "The sun shone."]


@pytest.mark.parametrize("task", ["cola", "sst2", "stsb", "wnli", "qnli"])
def test_every_real_glue_file_still_reads(glue_dir, task):
    splits = ["dev"] if task == "qnli" else ["train", "dev"]  # CI's copy of QNLI holds its dev set only
    for split in splits:
        path = tasks.glue_file(task, glue_dir, split)
        lines = sum(1 for line in path.read_text(encoding="utf-8-sig").split("\n") if line.strip("\r"))
        examples = tasks.load_glue(task, glue_dir, split)
        assert len(examples) == lines - tasks.GLUE_TASKS[task].has_header  # every row read, none shifted


def test_two_squad_questions_sharing_an_id_are_refused_when_read_and_when_scored(tmp_path, squad_dir):
    dataset = _squad([("q1", ["Paris"]), ("q2", ["Rome"])]) + _squad([("q3", ["Oslo"]), ("q1", ["Bern"])])
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"version": "v2.0", "data": dataset}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup.json: question id 'q1' is used twice \(articles 1 and 2"):
        tasks.load_squad(path)
    predictions = {"q1": "Paris", "q2": "Rome", "q3": "Oslo"}
    with pytest.raises(ValueError, match="question id 'q1' 2 times"):  # it scored 3 of 3, not 3 of 4
        metrics.squad_evaluate(dataset, predictions)
    examples, real = tasks.load_squad(squad_dir / "dev-v2.0-small.json")  # a real file has no repeated id
    assert len({example.qid for example in examples}) == len(examples) == 14
    assert metrics.squad_evaluate(real, {})["total"] == 14


def test_resuming_with_another_precision_is_refused(first_run, tmp_path):
    import shutil

    from bertlib.train import pretraining

    checkpoint_dir, settings, _ = first_run
    recorded = json.loads((checkpoint_dir / "latest.json").read_text())["fingerprint"]
    assert recorded["dtype_policy"] == "float32"  # the policy it computed in, recorded as the other settings
    shutil.copy(checkpoint_dir / "latest.json", tmp_path / "latest.json")  # the check reads only this
    with pytest.raises(ValueError, match=r"different run \(dtype_policy: 'float32' there, 'mixed_bfloat16' now"):
        pretraining.pretrain(steps=24, checkpoint_dir=tmp_path, **{**settings, "precision": "mixed_bfloat16"})


def test_more_masked_lm_slots_than_a_sequence_holds_are_refused_before_any_work(tmp_path, capsys):
    from bertlib import cli
    from bertlib.train.pretraining import PretrainSettings

    assert PretrainSettings(seq_length=32, max_predictions=29).max_predictions == 29  # 32 - [CLS] - 2 [SEP]
    for too_many in (30, 1000):
        with pytest.raises(ValueError, match=rf"max_predictions must be an integer in \[1, 29\], got {too_many}: "
                                             "a sequence of seq_length 32 has at most 29 tokens"):
            PretrainSettings(seq_length=32, max_predictions=too_many)
    assert cli.main(["pretrain", "--corpus", str(tmp_path / "nothing.txt"), "--seq-length", "32",
                     "--max-predictions", "1000"]) == 1
    assert "max_predictions must be an integer in [1, 29], got 1000" in capsys.readouterr().err
    good = _data_corpora(tmp_path)[0]
    argv = ["data", "--corpus", str(good), "--out", str(tmp_path / "out"), "--max-seq-length", "32",
            "--max-predictions", "1000"]
    assert cli.main([*argv, "--static-masking"]) == 2
    error = capsys.readouterr().err
    assert "--max-predictions 1000 is more than the 29 tokens a sequence of --max-seq-length 32 holds" in error
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.timeout(300)
def test_a_fifo_as_corpus_is_refused_up_front_instead_of_waiting_forever(tmp_path):
    import os
    import subprocess

    fifo = tmp_path / "corpus.txt"
    os.mkfifo(fifo)  # nothing ever writes to it: reading it would block for ever
    commands = {"data": ["data", "--corpus", str(fifo), "--out", str(tmp_path / "out")],
                "pretrain": ["pretrain", "--corpus", str(fifo), "--steps", "1"]}
    for command, argv in commands.items():
        try:
            done = _run_python(f"import sys; from bertlib import cli; sys.exit(cli.main({argv!r}))", timeout=120,
                               cwd=REPO_ROOT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"bertlib {command} --corpus FIFO waited for a writer instead of refusing it")
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert f"{fifo} is a FIFO (named pipe)" in done.stderr, done.stderr[-2000:]
    folder = tmp_path / "folder"  # a folder of corpus files may hold one too: refused when it is reached
    folder.mkdir()
    (folder / "a.txt").write_text("One sentence.\n", encoding="utf-8")
    os.mkfifo(folder / "b.txt")
    from bertlib.text import corpora

    with pytest.raises(ValueError, match=r"b.txt is a FIFO \(named pipe\)"):
        corpora.text_files(folder)
    with pytest.raises(FileNotFoundError, match="nope.txt not found"):
        corpora.text_files(tmp_path / "nope.txt")
