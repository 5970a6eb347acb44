"""Fine-tuning (§4, A.3): `tasks` (one `Task` per benchmark: GLUE, SQuAD v1.1/v2.0, SWAG, with their task models
`BertClassifier`, `BertSpanExtractor` and `BertMultipleChoice`, also importable from here and from `bertlib`),
`metrics` (the official scores) and `finetuning` (the loop, its settings and `bertlib finetune`)."""

from bertlib._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "TaskData": "tasks",  # what `prepare_data` gives and `train_and_evaluate` takes
    **{name: "tasks.heads" for name in ("BertClassifier", "BertSpanExtractor", "BertMultipleChoice")},  # task models
    **{name: "finetuning" for name in ("finetune", "FinetuneSettings", "load_init", "parse_grid",
                                       "train_and_evaluate", "prepare_data", "evaluate", "build_model",
                                       "WARMUP_FRACTION", "PAPER_GRID")}})
