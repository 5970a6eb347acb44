"""WordPiece tokenization, exactly as BERT does it (paper §4.2 and §A.2; guide chapter 2).

BERT never sees words or characters: it sees ids of *WordPieces* from a fixed vocabulary of about 30,000
pieces (Wu et al., 2016). Tokenizing a text takes two steps:

1. **Basic tokenization** (`normalize`, then `split_words`): remove control characters, turn every kind of
   whitespace into a space, put spaces around each CJK ideograph (Chinese has no spaces between words), strip
   accents (Unicode NFD, then drop the non-spacing marks) and lowercase for an uncased vocabulary, and split the
   text at whitespace and at every punctuation character.
2. **WordPiece** (`wordpiece`): cut each word greedily, longest match first, into pieces of the vocabulary.
   A piece that does not start the word is written with a `##` prefix, so `"unaffable"` becomes
   `["una", "##ffa", "##ble"]` and the cut can be undone. A word that cannot be cut (a character missing from
   the vocabulary) or that is longer than 100 characters becomes the single token `[UNK]`.

The special tokens are `[CLS]` (first position; its final hidden state is the sequence summary), `[SEP]` (ends
each segment), `[PAD]` (fills up to the fixed length; id 0), `[MASK]` (the masked-LM pretraining blank, §3.1)
and `[UNK]`. A special token written literally in the text (`"Paris is the [MASK] of France."`) is kept as
that token, as the checkpoint's own Hugging Face tokenizer does.

This module matches the `tokenizer.json` of the real uncased checkpoint (the Hugging Face `BertNormalizer` +
`BertPreTokenizer` + `WordPiece`) id for id; the library's tests check it on every GLUE sentence.
`WordPieceTokenizer.encode` is the readable pure-Python path; `encode_batch` and `pack_batch` are the same
algorithm with an ASCII shortcut and a per-word cache, for pipelines. `bertlib.text.vocabulary` learns a new
vocabulary from text.
"""

import bisect
import re
import unicodedata
from pathlib import Path

import numpy as np

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The uncased English BERT vocabulary (Google Research, Apache-2.0; see vocab/NOTICE.md), shipped with bertlib.
BERT_UNCASED_VOCAB = Path(__file__).with_name("vocab") / "bert-uncased.txt"
CONTINUATION_PREFIX = "##"
MAX_INPUT_CHARS_PER_WORD = 100

# Unicode White_Space (what the Hugging Face normalizer uses). "\x0b", "\x0c" and "\x85" are missing on purpose:
# they are control characters, and control characters are removed before whitespace is looked at.
_WHITESPACE = frozenset(" \t\n\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                        "\u2028\u2029\u202f\u205f\u3000")

# BERT's "CJK Unified Ideographs" blocks (not Japanese kana or Korean hangul, which are written with spaces).
# The checkpoint's tokenizer starts the sixth block at 0x2B920 where BERT's Python code has 0x2B820; we follow the
# checkpoint, so 0x2B820-0x2B91F are ordinary letters here.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_control(char):
    """True for characters the normalizer deletes: Unicode "other" (Cc, Cf, Co, Cs) and U+FFFD.

    Unassigned code points (Cn) are kept, as the checkpoint's tokenizer does; they end up as [UNK].
    """
    if char in "\t\n\r":  # control characters by category, but BERT treats them as whitespace
        return False
    return char == "\ufffd" or (unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")
                                 and not _in_ranges(char, _NEWER_FORMAT_CHARACTERS))


def is_whitespace(char):
    """True for characters that separate words."""
    return char in _WHITESPACE


def is_punctuation(char):
    """BERT's punctuation: all non-alphanumeric ASCII ("$", "+", "^" are not Unicode punctuation) and Unicode P*."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    if code in _FORMER_PUNCTUATION:
        return True
    return unicodedata.category(char).startswith("P") and not _in_ranges(char, _NEWER_PUNCTUATION)


def is_accent(char):
    """True for a non-spacing mark (Mn), such as the accent NFD splits off "é"; dropped for uncased vocabularies."""
    if ord(char) in _FORMER_MARKS:
        return True
    return unicodedata.category(char) == "Mn" and not _in_ranges(char, _NEWER_MARKS)


def is_cjk(char):
    """True for a CJK ideograph, which BERT treats as a word of its own."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def normalize(text, lowercase=True, strip_accents=None, split_cjk=True):
    """The Hugging Face `BertNormalizer`: clean, space out CJK, strip accents and lowercase (uncased only).

    `strip_accents` None follows `lowercase`, as in the reference tokenizers; `split_cjk=False` leaves CJK
    ideographs inside their words (the references' `tokenize_chinese_chars=False`).
    """
    strip_accents = lowercase if strip_accents is None else strip_accents
    characters = []
    for char in text:
        if is_control(char):
            continue
        if is_whitespace(char):
            characters.append(" ")
        elif split_cjk and is_cjk(char):
            characters.append(f" {char} ")
        else:
            characters.append(char)
    text = "".join(characters)
    if strip_accents:
        # Accents go before lowercasing, as in the checkpoint's tokenizer.json: NFD splits "é" into "e" and a
        # combining accent (category Mn), which is dropped.
        text = "".join(char for char in unicodedata.normalize("NFD", text) if not is_accent(char))
    if lowercase:
        # One character at a time, as the checkpoint's tokenizer does: str.lower() would also apply Greek's
        # final-sigma rule ("ΟΣ" -> "ος"), which depends on the next character.
        text = "".join(char.lower() for char in text) if "Σ" in text else text.lower()
    return text


def split_words(text):
    """The `BertPreTokenizer`: split at whitespace, and make each punctuation character a word of its own."""
    words = []
    current = []
    for char in text:
        if is_whitespace(char) or is_punctuation(char):
            if current:
                words.append("".join(current))
                current = []
            if not is_whitespace(char):
                words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def wordpiece(word, vocabulary, unknown_token="[UNK]", max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
    """Cut one word into vocabulary pieces, longest match first: `wordpiece("unaffable", v)` -> una ##ffa ##ble.

    Args:
        word: str, one word from `split_words`.
        vocabulary: a container of pieces (a set or dict for speed).
        unknown_token: str, returned alone when the word cannot be cut.
        max_input_chars_per_word: int, longer words become `unknown_token` (BERT uses 100).
    """
    if len(word) > max_input_chars_per_word:
        return [unknown_token]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else CONTINUATION_PREFIX + word[start:end]
            if piece in vocabulary:
                break
            end -= 1
        if end == start:  # no piece of the vocabulary starts here: the whole word is unknown, not just the rest
            return [unknown_token]
        pieces.append(piece)
        start = end
    return pieces


def basic_tokenize(text, lowercase=True, strip_accents=None, split_cjk=True):
    """Normalize, then split into words: the text BERT's WordPiece step sees (options as `normalize`)."""
    return split_words(normalize(text, lowercase, strip_accents, split_cjk))


def _normalize_with_sources(text, lowercase=True, strip_accents=None, split_cjk=True):
    """`normalize`, one source character at a time: (normalized characters, index in `text` of each).

    The same steps as `normalize`, so the characters join to `normalize(text, ...)`; a character that is
    removed (a control character, an accent) has no entry, and one that expands (a CJK ideograph gets
    spaces around it) gives every resulting character its own index, as the reference's alignments do.
    """
    strip_accents = lowercase if strip_accents is None else strip_accents
    characters, sources = [], []
    for index, char in enumerate(text):
        if is_control(char):
            continue
        if is_whitespace(char):
            pieces = " "
        elif split_cjk and is_cjk(char):
            pieces = f" {char} "
        else:
            pieces = char
            if strip_accents:
                pieces = "".join(c for c in unicodedata.normalize("NFD", pieces) if not is_accent(c))
            if lowercase:
                pieces = "".join(c.lower() for c in pieces)
        characters.extend(pieces)
        sources.extend([index] * len(pieces))
    return characters, sources


# The ASCII shortcut of the fast path. In ASCII, "other" characters are exactly the C0 controls and DEL, and
# every other non-alphanumeric printable character is punctuation for BERT.
_ASCII_CONTROLS = {code: None for code in [*range(9), 11, 12, *range(14, 32), 127]}
_ASCII_WORDS = re.compile(r"[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")


def fast_basic_tokenize(text, lowercase=True, strip_accents=None, split_cjk=True):
    """`basic_tokenize`, with a shortcut for ASCII text (most text: no accents, CJK or exotic spaces)."""
    if text.isascii():
        text = text.translate(_ASCII_CONTROLS)
        return _ASCII_WORDS.findall(text.lower() if lowercase else text)
    return basic_tokenize(text, lowercase, strip_accents, split_cjk)


class WordPieceTokenizer:
    """BERT's tokenizer: basic tokenization, then WordPiece (paper §4.2, §A.2).

    Args:
        vocabulary: list of str, the pieces in id order (line order of `vocab.txt`); must hold "[UNK]".
        lowercase: bool, default True. Lowercase and strip accents (an "uncased" vocabulary). Use False only
            with a cased vocabulary.
        strip_accents: bool or None (default: the same as `lowercase`), as Hugging Face's option: drop
            accents (NFD, then the non-spacing marks) whether or not the text is lowercased.
        never_split: tokens kept whole wherever they appear in the text, like the special tokens (the
            references' `never_split`); one missing from the vocabulary becomes [UNK].
        split_cjk: bool, default True. False keeps CJK ideographs inside words instead of making each one
            a word (`tokenize_chinese_chars=False` in the references).

    Example:

    >>> tokenizer = WordPieceTokenizer.bert_uncased()  # the released uncased vocabulary, shipped with bertlib
    >>> tokenizer.tokenize("Unaffable résumés!")
    ['una', '##ffa', '##ble', 'resume', '##s', '!']
    >>> features = tokenizer.pack("The cat sat.", "It purred.", sequence_length=12)
    >>> features["token_ids"]  # [CLS] the cat sat . [SEP] it pu ##rred . [SEP] [PAD]
    array([  101,  1996,  4937,  2938,  1012,   102,  2009, 16405, 20529,  1012,   102,     0], dtype=int32)
    >>> features["segment_ids"]
    array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0], dtype=int32)
    >>> tokenizer.decode(features["token_ids"])
    'the cat sat . it purred .'
    """

    def __init__(self, vocabulary, lowercase=True, strip_accents=None, never_split=(), split_cjk=True):
        self.vocabulary = [str(token) for token in vocabulary]
        self.lowercase = bool(lowercase)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        if isinstance(never_split, str):
            raise TypeError(f"never_split must be a list of tokens, got the str {never_split!r}.")
        self.never_split = tuple(dict.fromkeys(str(token) for token in never_split))
        if any(not token or token != token.strip() for token in self.never_split):
            raise ValueError(f"never_split tokens must be non-empty and without surrounding spaces, got "
                             f"{list(self.never_split)}.")
        self.split_cjk = bool(split_cjk)
        self._options = (self.lowercase, self.strip_accents, self.split_cjk)
        self.vocabulary_file = None  # set by `from_vocab_file`, named in error messages
        self._ids = {}
        for index, token in enumerate(self.vocabulary):
            if token in self._ids:
                raise ValueError(f"The vocabulary holds {token!r} twice (ids {self._ids[token]} and {index}); "
                                 "each piece must appear once.")
            self._ids[token] = index
        if "[UNK]" not in self._ids:
            raise ValueError("The vocabulary has no [UNK] token, so unknown words could not be encoded; add '[UNK]' "
                             "to it (bertlib.text.vocabulary.train_wordpiece_vocab reserves it at id 1).")
        present = [token for token in SPECIAL_TOKENS if token in self._ids] + list(self.never_split)
        # Like the checkpoint's tokenizer.json, special tokens typed in the text are matched before normalizing
        # (longest first, so a never_split token that contains another one wins).
        present = sorted(dict.fromkeys(present), key=len, reverse=True)
        self._special_pattern = re.compile("(" + "|".join(re.escape(token) for token in present) + ")")
        self._protected_marks = {token[0] for token in present}  # the fast path's cheap test
        self._word_cache = {}

    @classmethod
    def from_vocab_file(cls, path, lowercase=True, **options):
        """Read a BERT `vocab.txt` (UTF-8, one piece per line, the line number is the id); `options` as the
        class (strip_accents, never_split, split_cjk)."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8-sig").split("\n")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not a UTF-8 vocabulary file (bad byte at offset {error.start}).") from error
        if lines and lines[-1] == "":
            lines.pop()
        vocabulary = [line.rstrip("\r") for line in lines]
        empty = [number for number, token in enumerate(vocabulary, start=1) if not token.strip()]
        if empty:
            raise ValueError(f"{path} has an empty line at line {empty[0]}; expected one piece per line.")
        try:
            tokenizer = cls(vocabulary, lowercase=lowercase, **options)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error
        tokenizer.vocabulary_file = path
        return tokenizer

    @classmethod
    def bert_uncased(cls):
        """The tokenizer of the released uncased BERT models: their 30,522-piece vocabulary, lowercased, accents
        stripped (the vocabulary of the uncased Hugging Face checkpoints, which ships with bertlib)."""
        return cls.from_vocab_file(BERT_UNCASED_VOCAB)

    @classmethod
    def from_preset(cls, preset):
        """The tokenizer of a preset folder: one written by `save_to_preset` (tokenizer.json and
        assets/tokenizer/vocabulary.txt), or a Hugging Face folder (vocab.txt, with the options of its
        tokenizer_config.json: do_lower_case, strip_accents, tokenize_chinese_chars, never_split)."""
        from bertlib.model.presets import load_tokenizer

        return load_tokenizer(cls, preset)

    def save_to_preset(self, preset_dir, overwrite=False):
        """Write tokenizer.json and assets/tokenizer/vocabulary.txt as a folder (keras-hub's layout), whole
        and atomically; a folder that is not empty raises FileExistsError unless `overwrite=True`. To keep a
        model and its tokenizer in one preset, pass `tokenizer=` to `BertBackbone.save_to_preset`."""
        from bertlib.model.presets import tokenizer_writers, write_preset

        return write_preset(preset_dir, tokenizer_writers(self), overwrite=overwrite)

    # Vocabulary ---------------------------------------------------------------------------------------------

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def token_to_id(self, token):
        try:
            return self._ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary ({self._vocabulary_name()}).") from None

    def convert_tokens_to_ids(self, tokens):
        """Token string(s) -> id(s), a token missing from the vocabulary -> the [UNK] id (as Hugging Face's).

        A str gives one int, a list of str a list of ints. `token_to_id` raises instead, for code that must
        not meet unknown tokens.
        """
        if isinstance(tokens, str):
            return self._ids.get(tokens, self.unk_id)
        return [self._ids.get(_checked_token(token), self.unk_id) for token in tokens]

    def id_to_token(self, token_id):
        if np.ndim(token_id) != 0:
            raise TypeError(f"id_to_token takes one id, got {token_id!r}; decode takes a sequence of ids.")
        token_id = _token_ids(token_id)[0]
        if not 0 <= token_id < self.vocabulary_size:
            raise IndexError(f"Token id {token_id} is outside the vocabulary (ids 0 to {self.vocabulary_size - 1}).")
        return self.vocabulary[token_id]

    def _vocabulary_name(self):
        return str(self.vocabulary_file) if self.vocabulary_file else f"{self.vocabulary_size} pieces"

    def _special_id(self, token):
        if token not in self._ids:
            raise ValueError(f"The vocabulary ({self._vocabulary_name()}) has no {token} token; BERT needs "
                             f"{', '.join(SPECIAL_TOKENS)}. Train one with "
                             "bertlib.text.vocabulary.train_wordpiece_vocab, which reserves them.")
        return self._ids[token]

    @property
    def pad_id(self):
        return self._special_id("[PAD]")

    @property
    def unk_id(self):
        return self._special_id("[UNK]")

    @property
    def cls_id(self):
        return self._special_id("[CLS]")

    @property
    def sep_id(self):
        return self._special_id("[SEP]")

    @property
    def mask_id(self):
        return self._special_id("[MASK]")

    @property
    def special_token_ids(self):
        """Ids of the special tokens present, in the order [PAD] [UNK] [CLS] [SEP] [MASK]."""
        return [self._ids[token] for token in SPECIAL_TOKENS if token in self._ids]

    # The readable path ---------------------------------------------------------------------------------------

    def tokenize(self, text):
        """Text -> list of WordPiece strings, without [CLS]/[SEP]."""
        check_text(text)
        tokens = []
        for index, chunk in enumerate(self._special_pattern.split(text)):
            if index % 2:  # re.split with a group puts the special tokens it matched at odd positions
                tokens.append(chunk if chunk in self._ids else "[UNK]")  # a never_split token may be unknown
                continue
            for word in basic_tokenize(chunk, *self._options):
                tokens.extend(wordpiece(word, self._ids))
        return tokens

    def tokenize_with_offsets(self, text):
        """`tokenize(text)` and each token's (start, end) character span in `text`, as the checkpoint's
        `tokenizer.json` reports them (the `tokenizers` library's `Encoding.offsets`).

        A piece spans the source characters its normalized characters came from (a removed control
        character or accent inside it is covered); [UNK] spans its word; a special token spans itself.
        """
        check_text(text)
        tokens, offsets = [], []
        chunk_start = 0
        for index, chunk in enumerate(self._special_pattern.split(text)):
            if index % 2:
                tokens.append(chunk if chunk in self._ids else "[UNK]")
                offsets.append((chunk_start, chunk_start + len(chunk)))
            else:
                characters, sources = _normalize_with_sources(chunk, *self._options)
                for word_start, word_end in _word_spans(characters):
                    cursor = word_start
                    for piece in wordpiece("".join(characters[word_start:word_end]), self._ids):
                        length = word_end - word_start if piece == "[UNK]" else len(
                            piece.removeprefix(CONTINUATION_PREFIX) if cursor > word_start else piece)
                        tokens.append(piece)
                        offsets.append((chunk_start + sources[cursor], chunk_start + sources[cursor + length - 1] + 1))
                        cursor += length
            chunk_start += len(chunk)
        return tokens, offsets

    def encode(self, text):
        """Text -> list of ids, without [CLS]/[SEP] (pure Python, one character at a time: read this one)."""
        return [self._ids[token] for token in self.tokenize(text)]

    # The fast path: same ids -----------------------------------------------------------------------------------

    def encode_batch(self, texts):
        """List of texts -> list of id lists; identical to `[encode(t) for t in texts]`, several times faster."""
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a list of texts; for one text use encode(text).")
        return [self._encode_fast(text) for text in texts]

    def _encode_fast(self, text):
        check_text(text)
        if not any(mark in text for mark in self._protected_marks):  # no special token: skip the regex
            return self._encode_plain(text)
        ids = []
        for index, chunk in enumerate(self._special_pattern.split(text)):
            ids.extend([self._ids.get(chunk, self.unk_id)] if index % 2 else self._encode_plain(chunk))
        return ids

    def _encode_plain(self, text):
        ids = []
        cache = self._word_cache
        for word in fast_basic_tokenize(text, *self._options):
            word_ids = cache.get(word)
            if word_ids is None:
                if len(cache) >= 1_000_000:  # bound the memory on huge corpora; Zipf keeps the hit rate high
                    cache.clear()
                word_ids = [self._ids[piece] for piece in wordpiece(word, self._ids)]
                cache[word] = word_ids
            ids.extend(word_ids)
        return ids

    # Back to text ---------------------------------------------------------------------------------------------

    def decode(self, ids, skip_special_tokens=True):
        """Ids -> text: pieces joined by spaces, `##` pieces glued to the one before.

        Lowercasing, accents and the spaces around punctuation are not restored: `decode(encode("Don't!"))` is
        `"don ' t !"`. Special tokens are skipped by default, as in Hugging Face's `decode`.
        """
        special = set(self.special_token_ids) if skip_special_tokens else set()
        text = []
        for token_id in _token_ids(ids):
            if token_id in special:
                continue
            token = self.id_to_token(token_id)
            if token.startswith(CONTINUATION_PREFIX) and text:
                text.append(token[len(CONTINUATION_PREFIX):])
            else:
                text.append(" " + token if text else token)
        return "".join(text)

    # Model inputs ---------------------------------------------------------------------------------------------

    def pack(self, text_a, text_b=None, sequence_length=128):
        """One example -> dict of int32 arrays `token_ids, segment_ids, padding_mask`, shape (sequence_length,).

        The layout of §3 (Figure 2): `[CLS] A [SEP]` with segment 0, then `B [SEP]` with segment 1 for a pair,
        then [PAD] up to `sequence_length`. Too long a pair loses tokens from the end of the longer text first.
        """
        ids_b = None if text_b is None else self.encode(text_b)
        return self._pack_ids(self.encode(text_a), ids_b, sequence_length)

    def pack_batch(self, texts_a, texts_b=None, sequence_length=128):
        """Many examples -> dict of (n, sequence_length) int32 arrays; the fast path of `pack`."""
        if isinstance(texts_a, str) or isinstance(texts_b, str):
            raise TypeError("pack_batch expects lists of texts; for one example use pack(text_a, text_b).")
        texts_a = list(texts_a)
        ids_a = self.encode_batch(texts_a)
        if texts_b is None:
            ids_b = [None] * len(ids_a)
        else:
            texts_b = list(texts_b)
            if len(texts_b) != len(texts_a):
                raise ValueError(f"pack_batch got {len(texts_a)} first texts but {len(texts_b)} second texts; "
                                 "pairs need one of each.")
            ids_b = self.encode_batch(texts_b)
        shape = (len(ids_a), sequence_length)
        batch = {name: np.zeros(shape, np.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
        for row, (a, b) in enumerate(zip(ids_a, ids_b)):
            for name, values in self._pack_ids(a, b, sequence_length).items():
                batch[name][row] = values
        return batch

    def _pack_ids(self, ids_a, ids_b, sequence_length):
        num_specials = 2 if ids_b is None else 3
        if sequence_length < num_specials:
            raise ValueError(f"sequence_length={sequence_length} cannot hold the {num_specials} special tokens "
                             f"of {'a pair' if ids_b is not None else 'one text'}; use at least {num_specials}.")
        ids_a, ids_b = truncate_pair(ids_a, ids_b or [], sequence_length - num_specials)
        token_ids = [self.cls_id, *ids_a, self.sep_id]
        segment_ids = [0] * len(token_ids)
        if num_specials == 3:
            token_ids += [*ids_b, self.sep_id]
            segment_ids += [1] * (len(ids_b) + 1)
        padding = sequence_length - len(token_ids)
        return {
            "token_ids": np.array(token_ids + [self.pad_id] * padding, np.int32),
            "segment_ids": np.array(segment_ids + [0] * padding, np.int32),
            "padding_mask": np.array([1] * len(token_ids) + [0] * padding, np.int32),
        }

    def __repr__(self):
        options = "".join(f", {name}={value!r}" for name, value, default in (
            ("strip_accents", self.strip_accents, self.lowercase), ("never_split", list(self.never_split), []),
            ("split_cjk", self.split_cjk, True)) if value != default)
        return (f"WordPieceTokenizer(vocabulary_size={self.vocabulary_size}, lowercase={self.lowercase}{options}, "
                f"vocabulary_file={str(self.vocabulary_file) if self.vocabulary_file else None!r})")


def truncate_pair(ids_a, ids_b, max_length):
    """BERT's `_truncate_seq_pair`: drop the last token of the longer list (B on a tie) until both fit.

    Returns new lists; dropping one token at a time keeps as much of the shorter text as possible.
    """
    ids_a, ids_b = list(ids_a), list(ids_b)
    while len(ids_a) + len(ids_b) > max_length:
        longer = ids_a if len(ids_a) > len(ids_b) else ids_b
        longer.pop()
    return ids_a, ids_b


def _word_spans(characters):
    """(start, end) of each word of `split_words` in a list of normalized characters."""
    spans, start = [], None
    for index, char in enumerate(characters):
        if is_whitespace(char) or is_punctuation(char):
            if start is not None:
                spans.append((start, index))
                start = None
            if not is_whitespace(char):
                spans.append((index, index + 1))
        elif start is None:
            start = index
    if start is not None:
        spans.append((start, len(characters)))
    return spans


def _token_ids(ids):
    """`ids` (an id, a list or an array of them, any shape) as a flat list of ints. A TypeError names what is not
    an id: a bool, a float with a fraction (2023.7 is not read as 2023), a string or anything else; floats that
    are whole numbers (an array of ids computed in floats) are taken."""
    array = np.asarray(ids) if hasattr(ids, "dtype") or hasattr(ids, "numpy") else np.asarray(ids, dtype=object)
    flat = array.reshape(-1)
    if array.dtype == object:  # Python values: each looked at, since numpy would turn True or "7" into an id
        bad = [value for value in flat.tolist() if isinstance(value, bool)
               or not isinstance(value, (int, float, np.integer, np.floating))
               or (isinstance(value, (float, np.floating)) and not float(value).is_integer())]
    elif array.dtype == bool or not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        bad = flat[:1].tolist()
    else:
        bad = flat[~np.isfinite(flat) | (flat != np.round(flat))].tolist() if array.dtype.kind == "f" else []
    if bad:
        raise TypeError(f"Token ids must be integers; got {bad[0]!r} ({type(bad[0]).__name__}).")
    return [int(value) for value in flat.tolist()]


def _checked_token(token):
    if not isinstance(token, str):
        raise TypeError(f"Expected token strings, got {type(token).__name__}: {token!r:.80}")
    return token


def check_text(text):
    """A TypeError naming the value unless `text` is a str."""
    if not isinstance(text, str):
        raise TypeError(f"Expected a str to tokenize, got {type(text).__name__}: {text!r:.80}")


# The checkpoint's tokenizer (the Rust `tokenizers` library) reads character categories from Unicode 8.0 tables,
# Python from a newer Unicode. Punctuation, marks and format characters added since are ordinary letters for it,
# so they are for us too; these ranges list them as of Python 3.11's Unicode 14.0. Three characters changed
# category since Unicode 8.0: U+166D (now So) and U+111C9 (now Mn) were punctuation, U+1734 (now Mc) was Mn.
# tests/library/test_tokenizer.py compares every assigned code point with the checkpoint's tokenizer.
_FORMER_PUNCTUATION = (0x166D, 0x111C9)
_FORMER_MARKS = (0x1734,)
_NEWER_FORMAT_CHARACTERS = ((0x890, 0x891), (0x8E2, 0x8E2), (0x110CD, 0x110CD), (0x13430, 0x13438))
_NEWER_PUNCTUATION = (
    (0x61D, 0x61D), (0x9FD, 0x9FD), (0xA76, 0xA76), (0xC77, 0xC77), (0xC84, 0xC84), (0x1B7D, 0x1B7E),
    (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59), (0x10F86, 0x10F89),
    (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145D), (0x11660, 0x1166C), (0x116B9, 0x116B9),
    (0x1183B, 0x1183B), (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C),
    (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1E95E, 0x1E95F))
_NEWER_MARKS = (
    (0x7FD, 0x7FD), (0x898, 0x89F), (0x8CA, 0x8E1), (0x9FE, 0x9FE), (0xAFA, 0xAFF), (0xB55, 0xB55), (0xC04, 0xC04),
    (0xC3C, 0xC3C), (0xD00, 0xD00), (0xD3B, 0xD3C), (0xD81, 0xD81), (0xEBA, 0xEBA), (0x180F, 0x180F),
    (0x1885, 0x1886), (0x1ABF, 0x1ACE), (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF),
    (0xA9BD, 0xA9BD), (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85),
    (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2), (0x111C9, 0x111C9), (0x111CF, 0x111CF),
    (0x1123E, 0x1123E), (0x1133B, 0x1133B), (0x11438, 0x1143F), (0x11442, 0x11444), (0x11446, 0x11446),
    (0x1145E, 0x1145E), (0x1182F, 0x11837), (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E),
    (0x11943, 0x11943), (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38), (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96), (0x11A98, 0x11A99), (0x11C30, 0x11C36), (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F),
    (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36),
    (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91),
    (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16F4F, 0x16F4F), (0x16FE4, 0x16FE4),
    (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006), (0x1E008, 0x1E018), (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024), (0x1E026, 0x1E02A), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF),
    (0x1E944, 0x1E94A))


def _in_ranges(char, ranges):
    """True when the character's code point lies in one of the sorted, disjoint (first, last) ranges."""
    code = ord(char)
    index = bisect.bisect_right(ranges, (code, 0x10FFFF))
    return index > 0 and ranges[index - 1][0] <= code <= ranges[index - 1][1]
