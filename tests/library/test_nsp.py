"""NSP pairs (§3.2, A.1): format, the 50/50 balance, provenance of random B's, bad input."""

import random

import pytest

from bertlib.text import corpora
from bertlib.text.data import default_tokenizer
from bertlib.text.nsp import create_nsp_instances, truncate_seq_pair


@pytest.fixture(scope="module")
def tokenizer():
    return default_tokenizer()


@pytest.fixture(scope="module")
def python_docs():
    return corpora.python_docs()


def sentinel_corpus(tokenizer, num_documents=120, seed=0, max_sentences=8, max_words=20):
    """Documents whose every token is a distinct whole word of the vocabulary, so each id names its place.

    Returns (documents, where): `where[id] = (document index, position in that document's token stream)`.
    """
    words = [word for word in tokenizer.vocabulary[1000:] if word.isascii() and word.isalpha()]
    rng = random.Random(seed)
    rng.shuffle(words)
    documents, where, next_word = [], {}, 0
    for document_index in range(num_documents):
        sentences, position = [], 0
        for _ in range(rng.randint(1, max_sentences)):
            sentence = words[next_word:next_word + rng.randint(1, max_words)]
            next_word += len(sentence)
            for word in sentence:
                where[tokenizer.token_to_id(word)] = (document_index, position)
                position += 1
            sentences.append(" ".join(sentence))
        documents.append(sentences)
    return documents, where


def check_format(instance, tokenizer, max_seq_length):
    token_ids, segment_ids = instance["token_ids"], instance["segment_ids"]
    assert len(token_ids) == len(segment_ids) <= max_seq_length
    separators = [index for index, token in enumerate(token_ids) if token == tokenizer.sep_id]
    assert token_ids[0] == tokenizer.cls_id and token_ids[-1] == tokenizer.sep_id
    first_sep = separators[0]
    assert separators == [first_sep, len(token_ids) - 1] and 1 < first_sep < len(token_ids) - 2
    assert segment_ids == [0] * (first_sep + 1) + [1] * (len(token_ids) - first_sep - 1)
    return token_ids[1:first_sep], token_ids[first_sep + 1:-1]


def test_every_instance_is_cls_a_sep_b_sep_on_python_docs(tokenizer, python_docs):
    for max_seq_length in (128, 32):
        instances = create_nsp_instances(python_docs, tokenizer, max_seq_length=max_seq_length, seed=0)
        for instance in instances:
            check_format(instance, tokenizer, max_seq_length)
        lengths = [len(instance["token_ids"]) for instance in instances]
        # Most pairs fill the sequence; short_seq_prob=0.1 of the documents aim shorter.
        assert sum(length == max_seq_length for length in lengths) / len(lengths) > 0.3


def test_random_next_is_half_on_python_docs(tokenizer, python_docs):
    instances = [instance for seed in range(5)
                 for instance in create_nsp_instances(python_docs, tokenizer, max_seq_length=128, seed=seed)]
    assert len(instances) > 10_000  # standard error 0.005
    random_next = sum(instance["is_random_next"] for instance in instances) / len(instances)
    assert abs(random_next - 0.5) <= 0.02, (random_next, len(instances))


def test_one_sentence_documents_stay_balanced(tokenizer):
    # The original code would make every pair here NotNext; we cut the sentence for IsNext pairs.
    documents, where = sentinel_corpus(tokenizer, num_documents=1500, max_sentences=1, max_words=30)
    instances = create_nsp_instances(documents, tokenizer, max_seq_length=64, seed=0)
    random_next = sum(instance["is_random_next"] for instance in instances) / len(instances)
    assert abs(random_next - 0.5) < 0.05
    for instance in instances:
        a, b = check_format(instance, tokenizer, 64)
        if not instance["is_random_next"]:  # A then B, contiguous, from the one sentence
            places = [where[token] for token in a + b]
            assert len({document for document, _ in places}) == 1
            assert [position for _, position in places] == list(range(places[0][1], places[0][1] + len(places)))


def test_a_and_b_come_from_the_right_documents(tokenizer):
    documents, where = sentinel_corpus(tokenizer)
    instances = create_nsp_instances(documents, tokenizer, max_seq_length=48, seed=0)
    counts = {True: 0, False: 0}
    for instance in instances:
        a, b = check_format(instance, tokenizer, 48)
        a_places, b_places = [where[token] for token in a], [where[token] for token in b]
        a_documents = {document for document, _ in a_places}
        b_documents = {document for document, _ in b_places}
        assert len(a_documents) == 1 and len(b_documents) == 1
        # Each segment is a contiguous run of its document (truncation only trims the ends).
        for places in (a_places, b_places):
            positions = [position for _, position in places]
            assert positions == list(range(positions[0], positions[0] + len(positions)))
        if instance["is_random_next"]:
            assert a_documents != b_documents  # never the same document
        else:
            assert a_documents == b_documents and a_places[-1][1] < b_places[0][1]
        counts[instance["is_random_next"]] += 1
    assert min(counts.values()) > 0.4 * len(instances)


def test_unused_sentences_are_put_back(tokenizer):
    # Long documents of short sentences: after a random B, A's chunk leftovers start the next pair, so the
    # A segments of one document (in order) cover its sentences without big gaps.
    documents, where = sentinel_corpus(tokenizer, num_documents=40, max_sentences=40, max_words=6)
    instances = create_nsp_instances(documents, tokenizer, max_seq_length=64, short_seq_prob=0.0, seed=1)
    covered = set()
    for instance in instances:
        a, b = check_format(instance, tokenizer, 64)
        covered.update(a if instance["is_random_next"] else a + b)
    # Only truncation loses tokens; without the put-back, about a quarter would be lost.
    assert len(covered) / len(where) > 0.9


def test_deterministic_for_a_seed(tokenizer):
    documents, _ = sentinel_corpus(tokenizer, num_documents=30)
    first = create_nsp_instances(documents, tokenizer, max_seq_length=40, seed=5)
    assert first == create_nsp_instances(documents, tokenizer, max_seq_length=40, seed=5)
    assert first != create_nsp_instances(documents, tokenizer, max_seq_length=40, seed=6)


def test_long_sentence_is_truncated_to_fit(tokenizer):
    long_sentence = " ".join(["python"] * 400)
    documents = [[long_sentence], ["a short one.", "and another."], ["third document here."]]
    instances = create_nsp_instances(documents, tokenizer, max_seq_length=32, short_seq_prob=0.0, seed=0)
    for instance in instances:
        check_format(instance, tokenizer, 32)
    assert len(instances[0]["token_ids"]) == 32


def test_empty_documents_and_sentences_are_dropped(tokenizer):
    documents, _ = sentinel_corpus(tokenizer, num_documents=10)
    padded = [[]] + [document + ["", "   "] for document in documents] + [[""]]
    assert (create_nsp_instances(padded, tokenizer, max_seq_length=40, seed=2)
            == create_nsp_instances(documents, tokenizer, max_seq_length=40, seed=2))


@pytest.mark.parametrize("documents, message", [
    ([], "at least 2 non-empty documents"),
    ([["only one document.", "with two sentences."]], "at least 2 non-empty documents"),
    ([[], [""], ["   "]], "at least 2 non-empty documents"),
])
def test_too_few_documents_is_a_clear_error(tokenizer, documents, message):
    with pytest.raises(ValueError, match=message):
        create_nsp_instances(documents, tokenizer)


def test_bad_arguments_are_clear_errors(tokenizer):
    documents = [["one."], ["two."]]
    with pytest.raises(ValueError, match="max_seq_length=4 is too small"):
        create_nsp_instances(documents, tokenizer, max_seq_length=4)
    with pytest.raises(TypeError, match="list of sentence strings"):
        create_nsp_instances(["a whole document as one string", "another"], tokenizer)


def test_truncate_seq_pair_trims_the_longer_segment_at_both_ends():
    rng = random.Random(0)
    trimmed_front = trimmed_back = 0
    for _ in range(200):
        a, b = list(range(10)), list(range(100, 103))
        truncate_seq_pair(a, b, 8, rng)
        assert b == [100, 101, 102] and len(a) == 5
        assert a == list(range(a[0], a[0] + 5))  # still contiguous
        trimmed_front += a[0] > 0
        trimmed_back += a[-1] < 9
    assert trimmed_front > 50 and trimmed_back > 50
