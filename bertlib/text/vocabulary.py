"""Training a WordPiece vocabulary from text (§3: BERT uses WordPiece embeddings with a 30,000-token vocabulary;
Wu et al., 2016).

`train_wordpiece_vocab` learns the pieces `bertlib.text.tokenizer.WordPieceTokenizer` cuts words into, with
BPE-style merges as Hugging Face's WordPiece trainer makes them; `write_vocabulary` saves them as `vocab.txt`.
The words are counted after the tokenizer's own basic tokenization, so a vocabulary trained here and the
tokenizer that reads it agree on what a word is.
"""

import heapq
from collections import Counter, defaultdict
from itertools import pairwise

from bertlib.text.tokenizer import (
    CONTINUATION_PREFIX,
    MAX_INPUT_CHARS_PER_WORD,
    SPECIAL_TOKENS,
    check_text,
    fast_basic_tokenize,
)


def train_wordpiece_vocab(texts, vocabulary_size, lowercase=True, reserved_tokens=SPECIAL_TOKENS, output_path=None):
    """Learn a WordPiece vocabulary from texts (BPE-style merges, as Hugging Face's WordPiece trainer does).

    1. Count the words of the texts after the same basic tokenization the tokenizer uses.
    2. Start from the alphabet: every character as a word start (`"a"`) and as a continuation (`"##a"`).
    3. Repeatedly merge the most frequent adjacent pair of pieces inside words (`"t" + "##h"` -> `"th"`,
       ties broken alphabetically so the result is deterministic) and add the merged piece, until the
       vocabulary is full or no pair is left.

    Every training word whose characters are all in the vocabulary then tokenizes without [UNK], because
    single characters are always there to fall back on. If the alphabet alone does not fit, the most frequent
    characters are kept.

    Args:
        texts: iterable of str (sentences or documents).
        vocabulary_size: int, the size of the result (fewer pieces when the texts run out of pairs).
        lowercase: bool, default True; must match the tokenizer that will use the vocabulary.
        reserved_tokens: the first pieces, in order; the default puts [PAD] at id 0 like BERT.
        output_path: optional path; the vocabulary is written there as `vocab.txt` (one piece per line,
            written atomically).

    Returns:
        list of str, the vocabulary in id order.
    """
    reserved = list(dict.fromkeys(reserved_tokens))
    if vocabulary_size <= len(reserved):
        raise ValueError(f"vocabulary_size={vocabulary_size} leaves no room after the {len(reserved)} reserved "
                         f"tokens {reserved}; use a larger size (BERT uses 30,522).")
    if isinstance(texts, str):
        raise TypeError("train_wordpiece_vocab expects an iterable of texts, not one str.")
    word_counts = _count_words(texts, lowercase)
    vocabulary, words, counts = _start_from_the_alphabet(word_counts, reserved, vocabulary_size)
    _add_merges(vocabulary, words, counts, vocabulary_size)
    if output_path is not None:
        write_vocabulary(vocabulary, output_path)
    return vocabulary


def _count_words(texts, lowercase):
    """Step 1: the words of `texts` after the tokenizer's basic tokenization, counted."""
    word_counts = Counter()
    for text in texts:
        check_text(text)
        word_counts.update(fast_basic_tokenize(text, lowercase))
    return word_counts


def _start_from_the_alphabet(word_counts, reserved, vocabulary_size):
    """Step 2: (vocabulary, words, counts): the reserved tokens and the most frequent characters that fit, and
    the training words as lists of pieces ("the" -> ["t", "##h", "##e"]) with their counts."""
    words, counts = [], []
    for word, count in sorted(word_counts.items()):
        if len(word) <= MAX_INPUT_CHARS_PER_WORD:
            words.append([word[0]] + [CONTINUATION_PREFIX + char for char in word[1:]])
            counts.append(count)
    piece_counts = Counter()
    for pieces, count in zip(words, counts):
        for piece in pieces:
            piece_counts[piece] += count
    alphabet = sorted(piece_counts, key=lambda piece: (-piece_counts[piece], piece))
    alphabet = [piece for piece in alphabet if piece not in reserved][:vocabulary_size - len(reserved)]
    vocabulary = reserved + sorted(alphabet)
    known = set(vocabulary)
    # Words with a character that did not fit would end as [UNK] anyway: they take no part in merges.
    kept = [index for index, pieces in enumerate(words) if all(piece in known for piece in pieces)]
    return vocabulary, [words[index] for index in kept], [counts[index] for index in kept]


def _add_merges(vocabulary, words, counts, vocabulary_size):
    """Step 3, in place: merge the most frequent adjacent pair (ties: the smallest pair) in every word that holds
    it and append the merged piece to `vocabulary`, until it has `vocabulary_size` pieces or no pair is left.

    The pair counts are kept up to date word by word, in a heap whose stale entries are skipped when popped."""
    known = set(vocabulary)
    pair_counts = defaultdict(int)
    words_with_pair = defaultdict(set)
    for index, pieces in enumerate(words):
        for pair in pairwise(pieces):
            pair_counts[pair] += counts[index]
            words_with_pair[pair].add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    while len(vocabulary) < vocabulary_size and heap:
        negative_count, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative_count:
            continue  # a stale entry: this pair's count changed after it was pushed
        merged = pair[0] + pair[1][len(CONTINUATION_PREFIX):]
        if merged not in known:  # two different pairs can build the same piece
            vocabulary.append(merged)
            known.add(merged)
        changed = set()
        for index in words_with_pair.pop(pair):
            pieces, count = words[index], counts[index]
            for old_pair in pairwise(pieces):
                pair_counts[old_pair] -= count
                changed.add(old_pair)
            pieces = _merge_pair(pieces, pair, merged)
            words[index] = pieces
            for new_pair in pairwise(pieces):
                pair_counts[new_pair] += count
                words_with_pair[new_pair].add(index)
                changed.add(new_pair)
        for changed_pair in changed:
            if pair_counts[changed_pair] > 0:
                heapq.heappush(heap, (-pair_counts[changed_pair], changed_pair))
            else:
                del pair_counts[changed_pair]
                words_with_pair.pop(changed_pair, None)


def _merge_pair(pieces, pair, merged):
    """Replace every non-overlapping occurrence of `pair`, left to right, by `merged`."""
    result = []
    index = 0
    while index < len(pieces):
        if index + 1 < len(pieces) and (pieces[index], pieces[index + 1]) == pair:
            result.append(merged)
            index += 2
        else:
            result.append(pieces[index])
            index += 1
    return result


def write_vocabulary(vocabulary, path):
    """Write `vocab.txt` (one piece per line) atomically: a temporary file in the same folder, then a rename."""
    from bertlib.io.files import write_text_atomically

    return write_text_atomically(path, "".join(token + "\n" for token in vocabulary))
