"""How fast the tokenizer is: the readable path, the fast path, the checkpoint's Rust tokenizer, and training.

Measures on SST-2 train (67k sentences; the Python-docs corpus when no $BERTLIB_DATA folder holds it), in sentences per second:
1. `WordPieceTokenizer.encode`, the readable pure-Python path;
2. `WordPieceTokenizer.encode_batch`, the fast path, starting from an empty word cache;
3. the checkpoint's own tokenizer (`tokenizers`, Rust, all threads) for reference, when installed;
4. `pack_batch` at sequence length 128;
and the seconds `corpora.python_docs()` takes to build and `train_wordpiece_vocab` takes for 2k and 8k pieces.
The headline is (2).

Run: .venv/bin/python bench/tokenizer.py
"""

import time

from _record import headline  # bench/_record.py: the run's record


def seconds(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main():
    from bertlib.io import downloads
    from bertlib.text import corpora
    from bertlib.text.tokenizer import WordPieceTokenizer
    from bertlib.text.vocabulary import train_wordpiece_vocab
    from bertlib_course import paths

    build_time, documents = seconds(corpora.python_docs)
    sentences = [sentence for document in documents for sentence in document]
    print(f"python_docs: {len(documents)} documents, {len(sentences)} sentences, "
          f"{sum(len(s.split()) for s in sentences)} words, built in {build_time:.2f} s")
    sst2 = downloads.locate("sst2")  # `make bench` puts ../shared/data into $BERTLIB_DATA; no download
    if sst2 and (sst2 / "train.tsv").is_file():
        lines = (sst2 / "train.tsv").read_text(encoding="utf-8").split("\n")[1:]
        texts, name = [line.split("\t")[0] for line in lines if line], "SST-2 train"
    else:
        texts, name = sentences, "python_docs"
    path = paths.minilm_dir() / "vocab.txt"

    tokenizer = WordPieceTokenizer.from_vocab_file(path)
    pure_time, pure = seconds(lambda: [tokenizer.encode(text) for text in texts])
    tokenizer = WordPieceTokenizer.from_vocab_file(path)  # an empty word cache
    fast_time, fast = seconds(lambda: tokenizer.encode_batch(texts))
    assert fast == pure, "the fast path must give the readable path's ids"
    pack_time, _ = seconds(lambda: tokenizer.pack_batch(texts, sequence_length=128))
    print(f"{name}: {len(texts)} sentences")
    print(f"encode (readable): {len(texts) / pure_time:,.0f} sentences/s")
    print(f"pack_batch (128, warm cache): {len(texts) / pack_time:,.0f} sentences/s")
    try:
        import tokenizers
    except ImportError:
        tokenizers = None
    if tokenizers:
        reference = tokenizers.Tokenizer.from_file(str(path.parent / "tokenizer.json"))
        reference.no_padding()
        reference.no_truncation()
        hf_time, _ = seconds(lambda: reference.encode_batch(texts, add_special_tokens=False))
        print(f"tokenizers (Rust, reference): {len(texts) / hf_time:,.0f} sentences/s")
    for size in (2000, 8000):
        train_time, _ = seconds(lambda size=size: train_wordpiece_vocab(sentences, size))
        print(f"train_wordpiece_vocab({size}) on python_docs: {train_time:.2f} s")
    headline("tokenizer_fast_sentences_per_second", len(texts) / fast_time, unit="sentences/s", digits=0,
             details={"corpus": name, "readable": round(len(texts) / pure_time)}, backend_name="")


if __name__ == "__main__":
    main()
