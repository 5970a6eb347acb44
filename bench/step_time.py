"""One masked-LM training step: bertlib against keras-hub at the same size, alternating in one process.

Both models: L4/H256/A4, FFN 1024, vocabulary 30,522, sequence 128, batch 32, 20 predictions, the same
AdamW (§A.2 hyperparameters) and the same Keras `train_on_batch` machinery and compile settings; only the
model code differs. Rounds alternate (bertlib, keras-hub, bertlib, ...) so that load on the machine hits
both alike; the headline is the ratio of medians.

    python bench/step_time.py [--rounds 7] [--steps 10] [--precision float32]

Last line: `speedup_vs_keras_hub: X` (keras-hub step time / bertlib step time).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

SIZE = dict(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024, vocabulary_size=30522)
BATCH, SEQ, PREDICTIONS = 32, 128, 20


def optimizer():
    return keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                                  epsilon=1e-6, global_clipnorm=1.0)


def batch(seed=0):
    rng = np.random.default_rng(seed)
    x = {"token_ids": rng.integers(999, SIZE["vocabulary_size"], (BATCH, SEQ)).astype("int32"),
         "segment_ids": (np.arange(SEQ) >= SEQ // 2).astype("int32")[None].repeat(BATCH, 0),
         "padding_mask": np.ones((BATCH, SEQ), "int32"),
         "mask_positions": np.sort(rng.choice(SEQ, (BATCH, PREDICTIONS)), axis=1).astype("int32")}
    mask_ids = rng.integers(999, SIZE["vocabulary_size"], (BATCH, PREDICTIONS)).astype("int32")
    return x, mask_ids, np.ones((BATCH, PREDICTIONS), "float32")


def bertlib_model(jit_compile, activation):
    from bertlib import BertBackbone, BertConfig, BertPretrainer

    model = BertPretrainer(BertBackbone(BertConfig(**SIZE, activation=activation)), next_sentence=False)
    model.compile(optimizer=optimizer(), jit_compile=jit_compile)
    return model, lambda x, y, w: model.train_on_batch(x, {"mlm_logits": y}, sample_weight={"mlm_logits": w})


def keras_hub_model(jit_compile):
    import keras_hub

    backbone = keras_hub.models.BertBackbone(**SIZE, max_sequence_length=512)
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(optimizer=optimizer(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()], jit_compile=jit_compile)
    return model, lambda x, y, w: model.train_on_batch(x, y, sample_weight=w)


def time_steps(step, data, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step(*data)
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--jit-compile", default="auto", help="auto, true or false (same for both)")
    parser.add_argument("--activation", default="gelu_approximate",
                        help="bertlib's GELU: gelu_approximate (the tanh form keras-hub uses, so both models do "
                             "the same arithmetic) or gelu (exact, bertlib's default)")
    args = parser.parse_args()
    keras.mixed_precision.set_global_policy(args.precision)
    jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile.lower()]
    keras.utils.set_random_seed(0)

    data = batch()
    models = {"bertlib": bertlib_model(jit, args.activation), "keras_hub": keras_hub_model(jit)}
    params = {name: model.count_params() for name, (model, _) in models.items()}
    print(f"backend={keras.backend.backend()} precision={args.precision} jit_compile={args.jit_compile} "
          f"bertlib activation={args.activation} params={params}")
    for _, step in models.values():  # trace and compile outside the timed rounds
        time_steps(step, data, 3)
    # "auto" is resolved by Keras at the first step (on a CPU it picks plain TensorFlow graphs, no XLA).
    print("resolved jit_compile: " + ", ".join(f"{name} {model.jit_compile}" for name, (model, _) in models.items()))
    times = {name: [] for name in models}
    for round_index in range(args.rounds):
        for name, (_, step) in models.items():
            times[name].append(time_steps(step, data, args.steps))
        print(f"round {round_index}: " + ", ".join(f"{n} {t[-1] * 1000:.1f} ms" for n, t in times.items()))
    medians = {name: statistics.median(values) for name, values in times.items()}
    tokens_per_second = {name: BATCH * SEQ / value for name, value in medians.items()}
    print("median step: " + ", ".join(f"{n} {m * 1000:.1f} ms ({tokens_per_second[n]:.0f} tokens/s)"
                                      for n, m in medians.items()))
    print(f"speedup_vs_keras_hub: {medians['keras_hub'] / medians['bertlib']:.3f}")


if __name__ == "__main__":
    main()
