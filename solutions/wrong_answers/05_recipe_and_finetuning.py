"""Wrong answers to the exercises of solutions/05_recipe_and_finetuning.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "5.1": {
        "fractions ignored": [("batch_sequences * steps * fraction * length", "batch_sequences * steps * length")],
        "epochs inverted": [("return tokens / corpus_words", "return corpus_words / tokens")],
        "sequences counted, not tokens": [("batch_sequences * steps * fraction * length", "batch_sequences * steps * fraction")],
        "every step at the longest length": [("batch_sequences * steps * fraction * length for length, fraction in lengths_and_fractions",
                                              "batch_sequences * steps * max(length for length, _ in lengths_and_fractions) for _ in [0]")],
    },
    "5.2": {
        "2N: the forward pass only": [("6 * parameters * tokens", "2 * parameters * tokens")],
        "teraflop/s-days (the guide's 985)": [("1e15 * 86_400", "1e12 * 86_400")],
        "petaflop/s-hours": [("1e15 * 86_400", "1e15 * 3_600")],
    },
    "5.3": {
        "warmup off by one": [("peak * step / warmup_steps", "peak * (step + 1) / warmup_steps")],
        "decays to zero at total_steps + warmup_steps": [("1 - step / total_steps", "1 - (step - warmup_steps) / total_steps")],
        "decay measured from the end of warmup": [("1 - step / total_steps",
                                                   "1 - (step - warmup_steps) / (total_steps - warmup_steps)")],
        "no floor at zero": [("max(0.0, 1 - step / total_steps)", "(1 - step / total_steps)")],
        "warmup includes its last step": [("if step < warmup_steps:", "if step <= warmup_steps:")],
        "constant peak": '''def learning_rate(step, peak=1e-4, warmup_steps=10_000, total_steps=1_000_000):
    return peak
''',
    },
    "5.4": {
        "a multiply-add as one FLOP": [("layers * length * 2 * (", "layers * length * ("), ("layers * 2 * 2 *", "layers * 2 *")],
        "attention linear in n": [("length * length * hidden", "length * hidden")],
        "feed-forward counted once": [("2 * hidden * intermediate", "hidden * intermediate")],
        "Q K^T only, A V forgotten": [("layers * 2 * 2 * length", "layers * 2 * length")],
    },
    "5.5": {
        "no error: floor division": '''def per_replica(global_batch, replicas):
    return global_batch // replicas
''',
        "true division: a float batch": [("return global_batch // replicas", "return global_batch / replicas")],
        "the number of replicas returned": [("return global_batch // replicas", "return replicas")],
        "the error condition inverted": [("if global_batch % replicas:", "if not global_batch % replicas:")],
    },
}
