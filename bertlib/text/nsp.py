"""Next-sentence-prediction instances: `[CLS] A [SEP] B [SEP]` pairs from documents (§3.1 Task #2, A.1, A.2).

This follows `create_instances_from_document` of Google's `create_pretraining_data.py`, with one change so
the labels keep the paper's 50/50 balance (see `create_nsp_instances`). Label convention: `is_random_next`
True is NSP label 1, "NotNext", as in the original code and Hugging Face (some textbooks use the opposite).
"""

import random


def tokenize_documents(documents, tokenizer, progress=False):
    """Tokenize every sentence once: documents of strings -> documents of lists of token ids (no specials).

    Sentences that tokenize to nothing (empty or whitespace) are dropped, then documents left empty.
    """
    if progress:
        from bertlib._lazy import import_extra

        tqdm = import_extra("tqdm.auto", "data", "A progress bar").tqdm
        documents = tqdm(documents, desc="tokenizing documents", unit="doc")
    token_documents = []
    for document in documents:
        if isinstance(document, str):
            raise TypeError("Each document must be a list of sentence strings, not a single string; "
                            "split it into sentences first (e.g. bertlib.text.corpora).")
        sentences = [ids for ids in tokenizer.encode_batch(list(document)) if ids]
        if sentences:
            token_documents.append(sentences)
    return token_documents


def create_nsp_instances(documents, tokenizer, max_seq_length=128, short_seq_prob=0.1, seed=0):
    """Cut documents into NSP pairs, as the original `create_instances_from_document` (§3.1 Task #2, A.2).

    For each document: aim at `max_seq_length - 3` tokens (with probability `short_seq_prob`, at a random
    shorter length from 2: the released code's way to lessen the mismatch with short fine-tuning inputs),
    gather sentences into a chunk until the aim is reached, then cut the chunk at a random sentence boundary
    into A and B. With probability 1/2 B is replaced by sentences from a random *other* document
    (`is_random_next`, label 1 = NotNext) and the unused sentences of the chunk are put back for the next
    pair. Finally `truncate_seq_pair` trims the longer segment, from the front or the back at random, until
    the pair fits.

    Our change to the original: the label is drawn first. The original forces NotNext when a chunk has a
    single sentence (a one-sentence document, a sentence longer than the aim, a last sentence alone), which
    tips the balance toward NotNext. Here, when the coin says IsNext for a one-sentence chunk, that sentence
    is cut at a random word boundary into A and B (the paper's "sentences" are spans of contiguous text, §3).
    Only a one-token chunk, which cannot be cut, is still forced to NotNext.

    Inputs and edge cases: documents are lists of sentence strings; sentences that tokenize to nothing and
    documents left empty are dropped. At least two non-empty documents are needed (a random B must come from
    another document): otherwise ValueError. One-sentence documents are fine (see above). A document longer
    than `max_seq_length` gives several pairs; a single sentence longer than it is truncated (its other tokens
    are lost, as in the original). `max_seq_length` must be at least 5 ([CLS] a [SEP] b [SEP]).

    Args:
        documents: list of documents, each a list of sentence strings.
        tokenizer: `bertlib.text.tokenizer.WordPieceTokenizer` (or anything with `encode_batch`, `cls_id`,
            `sep_id`, `vocabulary`).
        max_seq_length: int, defaults to 128.
        short_seq_prob: float, defaults to 0.1.
        seed: int, defaults to 0; the result is a function of the seed.

    Returns:
        list of dicts, in document order: `token_ids` (list of int, `[CLS] A [SEP] B [SEP]`), `segment_ids`
        (0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP]) and `is_random_next` (bool).

    Example:
    >>> instances = create_nsp_instances(corpora.python_docs(), tokenizer, max_seq_length=128)
    >>> sum(i["is_random_next"] for i in instances) / len(instances)  # about 0.5
    """
    token_documents = tokenize_documents(documents, tokenizer)
    continuation_ids = {index for index, token in enumerate(tokenizer.vocabulary) if token.startswith("##")}
    return create_nsp_instances_from_ids(token_documents, tokenizer.cls_id, tokenizer.sep_id,
                                         max_seq_length=max_seq_length, short_seq_prob=short_seq_prob,
                                         seed=seed, continuation_ids=continuation_ids)


def create_nsp_instances_from_ids(token_documents, cls_id, sep_id, max_seq_length=128, short_seq_prob=0.1,
                                  seed=0, continuation_ids=()):
    """`create_nsp_instances` on documents already tokenized by `tokenize_documents` (lists of id lists).

    `continuation_ids` (the ids of "##" pieces) lets a one-sentence chunk be cut between words.
    """
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length={max_seq_length} is too small: an NSP pair needs at least 5 tokens "
                         "([CLS] A [SEP] B [SEP] with one token in A and in B); BERT uses 128 and 512.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob={short_seq_prob} must be in [0, 1].")
    token_documents = [[sentence for sentence in document if sentence] for document in token_documents]
    token_documents = [document for document in token_documents if document]
    if len(token_documents) < 2:
        raise ValueError(f"NSP needs at least 2 non-empty documents (a random B comes from another document); "
                         f"got {len(token_documents)}. Pass a corpus as a list of documents, each a list of "
                         "sentences.")
    rng = random.Random(seed)
    instances = []
    for document_index in range(len(token_documents)):
        instances.extend(_instances_from_document(token_documents, document_index, cls_id, sep_id,
                                                  max_seq_length, short_seq_prob, rng, set(continuation_ids)))
    return instances


def _instances_from_document(documents, document_index, cls_id, sep_id, max_seq_length, short_seq_prob, rng,
                             continuation_ids):
    document = documents[document_index]
    max_num_tokens = max_seq_length - 3  # [CLS], [SEP], [SEP]
    # Mostly fill the sequence; sometimes aim shorter, so that fine-tuning on short inputs is not a surprise.
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)

    instances = []
    chunk = []  # a list of sentences (lists of ids)
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_length:
            is_random_next = rng.random() < 0.5
            if len(chunk) == 1 and len(chunk[0]) == 1:
                is_random_next = True  # a single token cannot be cut into A and B
            if len(chunk) == 1 and not is_random_next:
                tokens_a, tokens_b = _cut_sentence(chunk[0], continuation_ids, rng)
            else:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = [token for sentence in chunk[:a_end] for token in sentence]
                if is_random_next:
                    tokens_b = _random_segment(documents, document_index, target_length - len(tokens_a), rng)
                    i -= len(chunk) - a_end  # put the unused sentences back
                else:
                    tokens_b = [token for sentence in chunk[a_end:] for token in sentence]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            instances.append({
                "token_ids": [cls_id] + tokens_a + [sep_id] + tokens_b + [sep_id],
                "segment_ids": [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1),
                "is_random_next": is_random_next,
            })
            chunk = []
            chunk_length = 0
        i += 1
    return instances


def _cut_sentence(sentence, continuation_ids, rng):
    """Cut one sentence at a random point into two non-empty parts, between words where possible."""
    between_words = [k for k in range(1, len(sentence)) if sentence[k] not in continuation_ids]
    cuts = between_words or list(range(1, len(sentence)))
    cut = rng.choice(cuts)
    return list(sentence[:cut]), list(sentence[cut:])


def _random_segment(documents, document_index, target_length, rng):
    """Sentences from a random other document, from a random start, until `target_length` tokens."""
    # Draw among the other documents directly (the original retries 10 times and may keep its own document).
    random_index = rng.randrange(len(documents) - 1)
    if random_index >= document_index:
        random_index += 1
    random_document = documents[random_index]
    tokens = []
    for sentence in random_document[rng.randrange(len(random_document)):]:
        tokens.extend(sentence)
        if len(tokens) >= target_length:
            break
    return tokens


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trim the longer list, one token at a time from the front or the back at random, to fit (in place).

    Cutting at either end, unlike fine-tuning's truncation, adds randomness and avoids biases (the original
    code's reason), e.g. segments that always start at a sentence start.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
