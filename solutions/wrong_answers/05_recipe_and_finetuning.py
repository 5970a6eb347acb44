"""Wrong answers to the exercises of solutions/05_recipe_and_finetuning.ipynb (see 01_problem_setting.py)."""

WRONG_ANSWERS = {
    "5.1": {
        "fractions ignored": [("batch_sequences * steps * fraction * length", "batch_sequences * steps * length")],
        "epochs inverted": [("return tokens / corpus_words", "return corpus_words / tokens")],
        "sequences counted, not tokens": [("batch_sequences * steps * fraction * length",
                                           "batch_sequences * steps * fraction")],
        "every step at the longest length": [("batch_sequences * steps * fraction * length for length, fraction in "
                                              "lengths_and_fractions",
                                              "batch_sequences * steps * max(length for length, _ in "
                                              "lengths_and_fractions) for _ in [0]")],
        "RoBERTa's 8K read as 8,192": [("pretraining_tokens(8_000, 500_000", "pretraining_tokens(8_192, 500_000")],
        "the ratio of the steps only": [("roberta_ratio = pretraining_tokens(8_000, 500_000, [(512, 1.0)]) / "
                                         "pretraining_tokens(256, 1_000_000, [(512, 1.0)])",
                                         "roberta_ratio = 500_000 / 1_000_000")],
        "the ratio inverted": [("roberta_ratio = pretraining_tokens(8_000, 500_000, [(512, 1.0)]) / "
                                "pretraining_tokens(256, 1_000_000, [(512, 1.0)])",
                                "roberta_ratio = pretraining_tokens(256, 1_000_000, [(512, 1.0)]) / "
                                "pretraining_tokens(8_000, 500_000, [(512, 1.0)])")],
        "BERT's curriculum instead of 512 throughout": [("pretraining_tokens(256, 1_000_000, [(512, 1.0)])",
                                                         "pretraining_tokens(256, 1_000_000, [(128, 0.9), (512, 0.1)])")],
    },
    "5.2": {
        "2N: the forward pass only": [("6 * parameters * tokens", "2 * parameters * tokens")],
        "teraflop/s-days (the guide's 985)": [("1e15 * 86_400", "1e12 * 86_400")],
        "petaflop/s-hours": [("1e15 * 86_400", "1e15 * 3_600")],
        "training days in hours": [("utilisation) / 86_400", "utilisation) / 3_600")],
        "utilisation multiplied, not divided": [("* utilisation) / 86_400", ") * utilisation / 86_400")],
        "one chip": [("flops / (chips * peak_per_chip", "flops / (peak_per_chip")],
        "the paper's 4 days, unchanged": [("large_on_base_days = training_days(2.87e20, 16, 45e12, 0.29)",
                                           "large_on_base_days = 4.0")],
        "64 chips kept": [("training_days(2.87e20, 16, 45e12, 0.29)", "training_days(2.87e20, 64, 45e12, 0.29)")],
    },
    "5.3": {
        "floor division: the short last batch dropped": [("total_steps = epochs * -(-num_examples // batch_size)",
                                                          "total_steps = epochs * (num_examples // batch_size)")],
        "warmup rounded, not rounded down": [("warmup_steps = int(warmup_fraction * total_steps)",
                                              "warmup_steps = round(warmup_fraction * total_steps)")],
        "warmup counted in epochs": [("warmup_steps = int(warmup_fraction * total_steps)",
                                      "warmup_steps = int(warmup_fraction * epochs)")],
        "pretraining's 10,000 warmup steps": [("warmup_steps = int(warmup_fraction * total_steps)",
                                               "warmup_steps = 10_000")],
        "no floor at zero": [("max(0.0, 1 - step / total_steps)", "(1 - step / total_steps)")],
        "one epoch only": [("total_steps = epochs * -(-num_examples // batch_size)",
                            "total_steps = -(-num_examples // batch_size)")],
        "decay measured from the end of warmup": [("max(0.0, 1 - step / total_steps)",
                                                   "max(0.0, 1 - (step - warmup_steps) / (total_steps - warmup_steps))")],
        "SST-2 steps with floor division": [("sst2_steps = (3 * -(-67_349 // 32), int(0.1 * 3 * -(-67_349 // 32)))",
                                             "sst2_steps = (3 * (67_349 // 32), int(0.1 * 3 * (67_349 // 32)))")],
    },
    "5.4": {
        "the cache also skips the prompt's first pass": [("if cache and i > 1:", "if cache:")],
        "n off by one": [("n = prompt + i - 1", "n = prompt + i")],
        "cached attention still quadratic": [("per_token_layers(1) + 4 * layers * n * hidden",
                                              "per_token_layers(1) + 4 * layers * n * n * hidden")],
        "no attention term": [(" + 4 * layers * n * n * hidden", ""), (" + 4 * layers * n * hidden", "")],
        "a multiply-add as one FLOP": [("return 2 * layers * n * (", "return layers * n * (")],
        "the saving inverted": [("cache_saving = generation_flops(128, 512, 2, 8, 400, False) / "
                                 "generation_flops(128, 512, 2, 8, 400, True)",
                                 "cache_saving = generation_flops(128, 512, 2, 8, 400, True) / "
                                 "generation_flops(128, 512, 2, 8, 400, False)")],
    },
    "5.5": {
        "the most accumulation steps": [("for steps in range(1, global_batch + 1):",
                                         "for steps in range(global_batch, 0, -1):")],
        "the memory limit ignored": [(" and global_batch // (replicas * steps) <= max_per_replica", "")],
        "no error: one pass of the floor share": [('raise ValueError(f"{global_batch} sequences cannot be split over '
                                                   '{replicas} replicas holding at most "\n'
                                                   '                     f"{max_per_replica} each")',
                                                   "return global_batch // replicas, 1")],
        "the share capped instead of divided": '''def replica_plan(global_batch, replicas, max_per_replica):
    if global_batch % replicas:
        raise ValueError(f"{global_batch} sequences cannot be split over {replicas} replicas ({max_per_replica})")
    per_replica = min(global_batch // replicas, max_per_replica)
    return per_replica, global_batch // (replicas * per_replica)
''',
        "the pair swapped": [("return global_batch // (replicas * steps), steps",
                              "return steps, global_batch // (replicas * steps)")],
        "a search that gives up after 4 steps and returns None": [
            ("for steps in range(1, global_batch + 1):", "for steps in range(1, 5):"),
            ('raise ValueError(f"{global_batch} sequences cannot be split over {replicas} replicas holding at most "\n'
             '                     f"{max_per_replica} each")', "return None")],
    },
    "5.6": {
        "warmup off by one (step + 1)": [("warmup = self.peak * step / self.warmup_steps",
                                          "warmup = self.peak * (step + 1) / self.warmup_steps")],
        "the cosine measured from step 0 (decays to the wrong step)": [(
            "progress = ops.clip((step - self.warmup_steps) / (self.total_steps - self.warmup_steps), 0.0, 1.0)",
            "progress = ops.clip(step / self.total_steps, 0.0, 1.0)")],
        "the decay ends warmup_steps too late": [(
            "progress = ops.clip((step - self.warmup_steps) / (self.total_steps - self.warmup_steps), 0.0, 1.0)",
            "progress = ops.clip((step - self.warmup_steps) / self.total_steps, 0.0, 1.0)")],
        "no floor: down to 0": [("decayed = self.floor + (self.peak - self.floor) * 0.5",
                                 "decayed = self.peak * 0.5")],
        "the floor added on top of the cosine": [("decayed = self.floor + (self.peak - self.floor) * 0.5",
                                                  "decayed = self.floor + self.peak * 0.5")],
        "p not clipped: the cosine rises again after total_steps": [(
            "progress = ops.clip((step - self.warmup_steps) / (self.total_steps - self.warmup_steps), 0.0, 1.0)",
            "progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)")],
        "the chapter's linear decay": [(
            "decayed = self.floor + (self.peak - self.floor) * 0.5 * (1.0 + ops.cos(math.pi * progress))",
            "decayed = self.floor + (self.peak - self.floor) * (1.0 - progress)")],
        "a full cosine period instead of a half": [("ops.cos(math.pi * progress)", "ops.cos(2 * math.pi * progress)")],
        "a Python if on the step": [("return ops.where(step < self.warmup_steps, warmup, decayed)",
                                     "if step < self.warmup_steps:\n            return warmup\n        return decayed")],
        "not a LearningRateSchedule": [("class WarmupCosineDecay(keras.optimizers.schedules.LearningRateSchedule):",
                                        "class WarmupCosineDecay:"),
                                       ("    def get_config(self):",
                                        "    @classmethod\n    def from_config(cls, config):\n        return cls(**config)"
                                        "\n\n    def get_config(self):")],
        "get_config without the floor": [('"total_steps": self.total_steps,\n                "floor": self.floor}',
                                          '"total_steps": self.total_steps}')],
        "get_config with numpy numbers": [("return {\"peak\": self.peak,", "return {\"peak\": np.float32(self.peak),")],
        "get_config with other names": [('return {"peak": self.peak, "warmup_steps": self.warmup_steps',
                                         'return {"peak": self.peak, "warmup": self.warmup_steps')],
        "the same rule in numpy (right on arrays, breaks in a compiled step)": [
            ('step = ops.cast(step, "float32")', 'step = np.asarray(step, dtype="float32")'),
            ("progress = ops.clip(", "progress = np.clip("),
            ("(1.0 + ops.cos(math.pi * progress))", "(1.0 + np.cos(math.pi * progress))"),
            ("return ops.where(step < self.warmup_steps, warmup, decayed)",
             'return np.where(step < self.warmup_steps, warmup, decayed).astype("float32")')],
    },
    "5.7": {
        "GELU on the up branch, not the gate": [
            ('activation="gelu", use_bias=False, name="gate"', 'use_bias=False, name="gate"'),
            ('self.up = keras.layers.Dense(self.intermediate_size, use_bias=False, name="up")',
             'self.up = keras.layers.Dense(self.intermediate_size, activation="gelu", use_bias=False, name="up")')],
        "the tanh approximation of GELU": [('activation="gelu"',
                                            "activation=lambda t: keras.activations.gelu(t, approximate=True)")],
        "a ReLU gate (ReGLU)": [('activation="gelu"', 'activation="relu"')],
        "the sum of the branches, not their product": [("ops.multiply(gate, up)", "ops.add(gate, up)")],
        "no gate: BERT's feed-forward, GELU(x V) W2": [("hidden = ops.multiply(gate, up)",
                                                        "hidden = keras.activations.gelu(up, approximate=False)")],
        "biases kept": [("use_bias=False", "use_bias=True")],
        "down projects to the intermediate size": [("self.down = keras.layers.Dense(input_shape[-1]",
                                                    "self.down = keras.layers.Dense(self.intermediate_size")],
        "geglu_size kept at BERT's 3,072": [("geglu_size = 2 * 3_072 // 3", "geglu_size = 3_072")],
        "geglu_size halved (two matrices counted as one)": [("geglu_size = 2 * 3_072 // 3", "geglu_size = 3_072 // 2")],
        "the product in numpy (right on arrays, breaks in a compiled step)": [
            ("hidden = ops.multiply(gate, up)",
             "hidden = ops.convert_to_tensor(np.asarray(gate) * np.asarray(up))")],
    },
}

# Answers that are right another way than the reference (`bertlib exercises test` wants each to pass the public
# checks and the hidden tests alike): the value rounded as the question says, where the reference leaves it unrounded.
RIGHT_ANSWERS = {
    "5.1": {"roberta_ratio rounded to 1 decimal": [(
        "roberta_ratio = pretraining_tokens(8_000, 500_000, [(512, 1.0)]) / pretraining_tokens(256, 1_000_000, [(512, 1.0)])",
        "roberta_ratio = round(pretraining_tokens(8_000, 500_000, [(512, 1.0)]) / pretraining_tokens(256, 1_000_000, "
        "[(512, 1.0)]), 1)")]},
    "5.2": {"large_on_base_days rounded to 1 decimal": [(
        "large_on_base_days = training_days(2.87e20, 16, 45e12, 0.29)",
        "large_on_base_days = round(training_days(2.87e20, 16, 45e12, 0.29), 1)")]},
    "5.4": {"cache_saving rounded to 1 decimal": [(
        "cache_saving = generation_flops(128, 512, 2, 8, 400, False) / generation_flops(128, 512, 2, 8, 400, True)",
        "cache_saving = round(generation_flops(128, 512, 2, 8, 400, False) / generation_flops(128, 512, 2, 8, 400, "
        "True), 1)")]},
}
