"""Where the step time goes: bertlib's parts against keras-hub's, forward + backward, one part at a time.

`step_time.py` compares whole training steps; this script splits them so a gap can be located. Each part is
taken out of the two models that `step_time.py` builds (L4/H256/A4, FFN 1024, vocabulary 30,522, sequence 128,
batch 32, 20 predictions) and timed as one compiled function (XLA, or plain TensorFlow graphs with --no-xla)
that runs it in training mode (dropout on) and takes the gradient of a scalar of its output with respect to its
weights and its float input:

    embeddings   token + position + segment embedding, LayerNorm, dropout
    attention    the block's self-attention layer alone (QKV projection, attention, output projection)
    block        one encoder block (self-attention, FFN, two LayerNorms)
    mlm_head     the masked-LM head: gather 20 positions, transform, tied decoder over 30,522 pieces
    backbone     the whole encoder (embeddings, 4 blocks, pooler)

Rounds alternate between the two libraries; medians are reported.

    python bench/step_time_parts.py [--rounds 7] [--steps 10] [--no-xla] [--parts block,mlm_head]

Last line: `block_speedup_vs_keras_hub: X` (keras-hub's block time / bertlib's).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _record import headline  # bench/_record.py: the run's record
from step_time import BATCH, PREDICTIONS, SEQ, SIZE, batch  # noqa: E402

JIT_COMPILE = True


def compiled_gradient(call, variables):
    """A compiled function returning d(sum of squares of `call(inputs)`)/d(variables and float inputs)."""

    @tf.function(jit_compile=JIT_COMPILE)
    def step(inputs):
        floats = [value for value in tf.nest.flatten(inputs) if value.dtype.is_floating]
        with tf.GradientTape() as tape:
            tape.watch(floats)
            outputs = tf.nest.flatten(call(inputs))
            loss = tf.add_n([tf.reduce_sum(tf.square(tf.cast(output, "float32"))) for output in outputs])
        return tape.gradient(loss, [*variables, *floats])

    return step


def parts():
    import keras_hub
    from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask

    from bertlib import BertBackbone, BertConfig, BertPretrainer

    x, _, _ = batch()
    hidden = np.random.default_rng(1).normal(size=(BATCH, SEQ, SIZE["hidden_dim"])).astype("float32")
    padding_mask = tf.constant(x["padding_mask"])
    positions = tf.constant(x["mask_positions"])
    encoder_inputs = {name: tf.constant(x[name]) for name in ("token_ids", "segment_ids", "padding_mask")}

    ours = BertPretrainer(BertBackbone(BertConfig(**SIZE, activation="gelu_approximate")), next_sentence=False)
    ours(x)
    hub_backbone = keras_hub.models.BertBackbone(**SIZE, max_sequence_length=512)
    hub = keras_hub.models.BertMaskedLM(hub_backbone, preprocessor=None)
    hub(x)

    our_backbone = ours.backbone
    our_block, hub_block = our_backbone.get_layer("encoder_block_0"), hub_backbone.get_layer("transformer_layer_0")
    our_head, hub_head = ours.get_layer("mlm_head"), hub.get_layer("mlm_head")
    our_attention, hub_attention = our_block.self_attention, hub_block._self_attention_layer
    hub_attention_mask = merge_padding_and_attention_mask(tf.constant(hidden), padding_mask, None)  # as its block does

    def our_embeddings(inputs):
        return our_backbone.get_layer("embedding")(inputs["token_ids"], inputs["segment_ids"], training=True)

    def hub_embeddings(inputs):
        tokens = hub_backbone.get_layer("token_embedding")(inputs["token_ids"])
        positions_ = hub_backbone.get_layer("position_embedding")(tokens)
        segments = hub_backbone.get_layer("segment_embedding")(inputs["segment_ids"])
        added = hub_backbone.get_layer("embeddings_add")((tokens, positions_, segments))
        normed = hub_backbone.get_layer("embeddings_layer_norm")(added)
        return hub_backbone.get_layer("embeddings_dropout")(normed, training=True)

    embedding_variables = {
        "bertlib": our_backbone.get_layer("embedding").trainable_variables,
        "keras_hub": [v for name in ("token_embedding", "position_embedding", "segment_embedding",
                                     "embeddings_layer_norm") for v in hub_backbone.get_layer(name).trainable_variables]}
    return {
        "embeddings": {
            "bertlib": (compiled_gradient(our_embeddings, embedding_variables["bertlib"]), encoder_inputs),
            "keras_hub": (compiled_gradient(hub_embeddings, embedding_variables["keras_hub"]), encoder_inputs)},
        "attention": {
            "bertlib": (compiled_gradient(lambda h: our_attention(h, padding_mask=padding_mask, training=True),
                                          our_attention.trainable_variables), tf.constant(hidden)),
            "keras_hub": (compiled_gradient(
                lambda h: hub_attention(query=h, value=h, attention_mask=hub_attention_mask, training=True),
                hub_attention.trainable_variables), tf.constant(hidden))},
        "block": {
            "bertlib": (compiled_gradient(lambda h: our_block(h, padding_mask=padding_mask, training=True),
                                          our_block.trainable_variables), tf.constant(hidden)),
            "keras_hub": (compiled_gradient(lambda h: hub_block(h, padding_mask=padding_mask, training=True),
                                            hub_block.trainable_variables), tf.constant(hidden))},
        "mlm_head": {
            "bertlib": (compiled_gradient(lambda h: our_head(h, positions, training=True),
                                          our_head.trainable_variables + our_backbone.get_layer("embedding")
                                          .token_embedding.trainable_variables), tf.constant(hidden)),
            "keras_hub": (compiled_gradient(lambda h: hub_head(h, mask_positions=positions, training=True),
                                            hub_head.trainable_variables), tf.constant(hidden))},
        "backbone": {
            "bertlib": (compiled_gradient(lambda inputs: our_backbone(inputs, training=True),
                                          our_backbone.trainable_variables), encoder_inputs),
            "keras_hub": (compiled_gradient(lambda inputs: hub_backbone(inputs, training=True),
                                            hub_backbone.trainable_variables), encoder_inputs)},
    }


def time_calls(step, inputs, steps):
    start = time.perf_counter()
    for _ in range(steps):
        result = step(inputs)
    np.asarray(result[0])  # wait for the last call
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--parts", default="embeddings,attention,block,mlm_head,backbone", help="comma-separated subset")
    parser.add_argument("--no-xla", action="store_true", help="TensorFlow graphs without XLA (Keras' CPU default)")
    args = parser.parse_args()
    global JIT_COMPILE
    JIT_COMPILE = not args.no_xla
    keras.utils.set_random_seed(0)
    timed = parts()
    print(f"backend={keras.backend.backend()} float32 {'XLA' if JIT_COMPILE else 'no XLA'}; batch {BATCH} x {SEQ}, {PREDICTIONS} predictions")
    medians = {}
    for part, functions in timed.items():
        if part not in args.parts.split(","):
            continue
        for step, inputs in functions.values():  # trace and compile outside the timed rounds
            time_calls(step, inputs, 2)
        times = {name: [] for name in functions}
        for _ in range(args.rounds):
            for name, (step, inputs) in functions.items():
                times[name].append(time_calls(step, inputs, args.steps))
        medians[part] = {name: statistics.median(values) for name, values in times.items()}
        ours, theirs = medians[part]["bertlib"], medians[part]["keras_hub"]
        print(f"{part:10s} bertlib {ours * 1000:7.2f} ms  keras_hub {theirs * 1000:7.2f} ms  "
              f"speedup {theirs / ours:.3f}", flush=True)
    if "block" in medians:
        headline("block_speedup_vs_keras_hub", medians["block"]["keras_hub"] / medians["block"]["bertlib"], unit="x",
                 digits=3, details={"bertlib_ms": round(medians["block"]["bertlib"] * 1000, 2),
                                    "keras_hub_ms": round(medians["block"]["keras_hub"] * 1000, 2)})


if __name__ == "__main__":
    main()
