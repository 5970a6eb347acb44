"""Where one bertlib pretraining step spends its time outside the matmuls (issue 26, item 1).

Builds exactly the step `step_time.py` times (its `bertlib_model`, `batch`, `time_steps`: BertPretrainer without
NSP, AdamW with global clipnorm, Keras `train_on_batch`, default `--jit-compile auto` = plain TensorFlow graphs
on a CPU), warms it up, times `--steps` steps without the profiler, then traces `--steps` more with
`tf.profiler.experimental.start/stop` into a temporary directory and reads the `*.xplane.pb` it writes
(`tensorflow.tsl.profiler.protobuf.xplane_pb2`). On the host plane every TensorFlow op the executor runs is an
event named `op_name:OpType` on its thread's line; an op's self time is its duration minus the ops nested in it
on the same line. Self times are summed per category:

    matmul             MatMul, BatchMatMul*, Einsum, _FusedMatMul (forward and backward)
    attention softmax  Softmax and its gradient (the Mul/Sum/Sub ops that read the Softmax output, found in
                       the step's FunctionDef, since tape gradients carry the layer's scope, not "Softmax")
    MLM loss           the 30,522-way softmax cross-entropy and the loss's other ops
    LayerNorm          every op under a layer_norm scope (Mean, SquaredDifference, Rsqrt, ... and gradients)
    GELU               every op under a Gelu scope (Tanh/Erf, TanhGrad, ... forward and backward)
    dropout: random    Stateless*Random*, RandomUniform* (the random numbers)
    dropout: masks     the rest of the dropout scopes: compare, select, scale, and their gradients
    embedding grad     the tied 30,522 x H table's gradient outside the matmuls: IndexedSlices made dense
                       (UnsortedSegmentSum, also the ones the optimizer's clipnorm makes), the AddN that adds
                       them to the decoder's gradient, the transpose of the decoder's gradient
    AdamW update       every other op under the optimizer's name scope (clipnorm, moments, weight decay, assign)
    casts              every Cast, in whatever scope (checked right after the matmuls)
    gathers/scatters   Gather*, Scatter*, UnsortedSegmentSum, StridedSliceGrad (outside the scopes above)
    transposes/copies  Transpose, Pack/Unpack, StridedSlice, Tile, BroadcastTo, ConcatV2, Reshape...
    accuracy metric    the argmax accuracy over the 30,522 logits and Keras' metric bookkeeping
    other              everything else (bias adds and their gradients, residual adds, AddN, ...)

Independent checks, printed beside the table: (1) the step's wall time without the profiler, and with it;
(2) the time the graph function itself runs (`KernelAndDeviceFunc::Run` on the Python thread), the rest of
the wall time being Keras/Python around it; (3) the union of the op intervals over all threads (time at least one
op runs); (4) the sum of the self times. Ops on the two inter-op threads overlap, so (4) can exceed (3); an
op split across cores (a matmul) is one event on the thread that launched it, so its self time is wall time
with both cores busy. Columns: "self ms", summed self time per step (share of that sum); "wall ms", the
same time with every stretch where k ops run side by side split k ways, so that the categories and the stretches
where no op runs add up to the profiled step's wall time (share of that). The profiler itself slows the many
small ops (about 2% on the bench step, 45% on the tiny one), so compare the profiled wall with the unprofiled.

    python bench/step_time.py ...            # the figures this profiles
    python bench/profile_step.py [--steps 5] [--precisions float32 mixed_bfloat16] [--preset bench]
    python bench/profile_step.py --smoke      # tiny model, small batch, a few seconds
    python bench/profile_step.py --model keras_hub   # keras-hub's BertMaskedLM step, same categories

`--model keras_hub` profiles `step_time.py`'s keras-hub model in the same categories, so the two libraries'
steps can be set side by side (it replaces the old `step_profile.py`, whose coarser groups summed self times
only). keras-hub's layers carry their own scope names; the categories match them by the same words
("layer_norm", "gelu", "dropout", "loss"), and its masked-LM head's ops that no word names fall under "other".

Last line: `non_matmul_ms_per_step_f32: X` (the profiled float32 step's wall time minus its matmuls' share, ms;
`keras_hub_non_matmul_ms_per_step_f32` with `--model keras_hub`).
"""

import argparse
import collections
import glob
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_time as st  # noqa: E402  (sets the CPU threads with bertlib.train.host.configure_cpu first)

# isort: split
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from _record import headline  # bench/_record.py: the run's record

CATEGORIES = ("matmul", "attention softmax", "MLM loss", "LayerNorm", "GELU", "dropout: random", "dropout: masks",
              "embedding grad", "AdamW update", "casts", "gathers/scatters", "transposes/copies",
              "accuracy metric", "other")
MATMUL_TYPES = {"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "_FusedMatMul",
                "_MklMatMul", "_MklBatchMatMulV2", "_MklFusedMatMul", "_MklNativeFusedMatMul"}
RANDOM_TYPES = re.compile(r"^(Stateless\w*Random\w*|RandomUniform\w*|RandomStandardNormal|"
                          r"StatelessRandomGetKeyCounter\w*|RngReadAndSkip|RngBitGenerator)$")
GATHER_TYPES = re.compile(r"^(Gather\w*|ResourceGather\w*|\w*Scatter\w*|UnsortedSegment\w*|SegmentSum|"
                          r"SparseSegment\w*|StridedSliceGrad)$")
COPY_TYPES = {"Transpose", "Pack", "Unpack", "StridedSlice", "Slice", "Tile", "BroadcastTo", "ConcatV2", "Concat",
              "Reshape", "Split", "SplitV", "ExpandDims", "Squeeze", "Identity", "Fill", "ZerosLike", "OnesLike",
              "Pad", "PadV2", "Select", "SelectV2"}
METRIC_TYPES = {"ArgMax", "BitwiseAnd", "Bitcast", "DivNoNan"}
OP_EVENT = re.compile(r"^([^\s:]+):([A-Za-z_][A-Za-z0-9_]*)$")  # 'scope/op_name:OpType' (not 'A::B')
PRESETS = {  # name: (SIZE overrides, batch, seq, predictions)
    "bench": ({}, st.BATCH, st.SEQ, st.PREDICTIONS),  # step_time.py's own configuration (the figures)
    "tiny": (dict(num_layers=2, hidden_dim=128, num_heads=2, intermediate_dim=512), 8, 64, 10),
    # the chapters' toy pretrainer (bench/tiny_step.py): every step is per-op overhead
    "course": (dict(num_layers=2, hidden_dim=64, num_heads=2, intermediate_dim=256, vocabulary_size=45), 64, 16, 2),
}
SHORT = {"float32": "f32", "mixed_bfloat16": "bf16", "mixed_float16": "f16"}


def function_graph(names):
    """{node name: (op type, [input node names])} of the traced FunctionDefs `names` and the ones they call."""
    from tensorflow.python.eager import context

    nodes, todo, seen = {}, list(names), set()
    while todo:
        name = todo.pop()
        if name in seen or not context.context().has_function(name):
            continue
        seen.add(name)
        for node in context.context().get_function_def(name).node_def:
            inputs = [item.lstrip("^").split(":")[0] for item in node.input]
            nodes[node.name] = (node.op, inputs)
            for attr in node.attr.values():
                if attr.func.name:
                    todo.append(attr.func.name)
    return nodes


def softmax_gradient_ops(nodes):
    """Names of the ops of Softmax's gradient: (g - sum(g * s)) * s reads the softmax output s twice."""
    outputs = {name for name, (op, _) in nodes.items() if op == "Softmax"}
    consumers = collections.defaultdict(list)
    for name, (_, inputs) in nodes.items():
        for item in inputs:
            consumers[item].append(name)
    found = set()
    for softmax in outputs:
        first = [c for c in consumers[softmax] if c.startswith("gradient_tape/") and nodes[c][0] == "Mul"]
        found.update(first)
        for mul in first:
            for total in consumers[mul]:
                if nodes[total][0] == "Sum":
                    found.add(total)
                    found.update(c for c in consumers[total] if nodes[c][0] == "Sub")
    return found


def embedding_gradient_ops(nodes):
    """AddN ops that add a densified IndexedSlices (the token lookup's gradient) to another gradient."""
    return {name for name, (op, inputs) in nodes.items()
            if op == "AddN" and any(nodes.get(item, ("",))[0] == "UnsortedSegmentSum" for item in inputs)}


def categorize(name, op_type, optimizer_scope, softmax_grad, embedding_addn):
    lower = name.lower()
    parts = lower.split("/")
    if op_type in MATMUL_TYPES:
        return "matmul"
    if op_type == "Cast":
        return "casts"  # every dtype cast, whatever scope it is in (mixed precision's, the loss's float32 logits)
    if op_type == "Softmax" or name in softmax_grad:
        return "attention softmax"
    if op_type in ("UnsortedSegmentSum", "ScatterNd", "SparseSegmentSum") and "encoder_block" not in lower:
        return "embedding grad"  # the token table's IndexedSlices made dense (also inside the optimizer's clipnorm)
    if name in embedding_addn or (lower.startswith("gradient_tape/") and "mlm_head" in lower
                                  and op_type == "Transpose"):
        return "embedding grad"
    if optimizer_scope in parts:
        return "AdamW update"
    if "dropout" in lower or RANDOM_TYPES.match(op_type):
        return "dropout: random" if RANDOM_TYPES.match(op_type) else "dropout: masks"
    if op_type.startswith("FusedBatchNorm") or any("layer_norm" in p or "layernorm" in p for p in parts):
        return "LayerNorm"
    if "gelu" in lower or op_type in ("Erf", "Erfc", "Tanh", "TanhGrad"):
        return "GELU"
    if "loss" in lower or op_type.startswith("SparseSoftmaxCrossEntropy") or op_type == "LogSoftmax":
        return "MLM loss"
    if GATHER_TYPES.match(op_type):
        return "gathers/scatters"
    if op_type in METRIC_TYPES or ("/" not in name and op_type in
                                   ("Equal", "Less", "LogicalAnd", "SelectV2", "Mean", "Sum", "Mul",
                                    "AssignVariableOp", "AssignAddVariableOp", "AddV2")):
        return "accuracy metric"  # ops outside any layer: Keras' metric/loss trackers and the argmax accuracy
    if op_type in COPY_TYPES:
        return "transposes/copies"
    return "other"


def innermost_segments(ops):
    """(start, end, key) stretches of one thread's line where an op is the innermost one open (its self time)."""
    segments, stack = [], []  # open ops: [end, key, start of its current innermost stretch]

    def close_until(time_ps):
        while stack and stack[-1][0] <= time_ps:
            end, key, since = stack.pop()
            segments.append((since, end, key))
            if stack:
                stack[-1][2] = end  # the parent is innermost again

    for start, end, key in sorted(ops, key=lambda op: (op[0], -op[1])):
        close_until(start)
        if stack:
            segments.append((stack[-1][2], start, stack[-1][1]))
        stack.append([end, key, start])
    close_until(float("inf"))
    return segments


def read_trace(logdir):
    """From the trace: per (op name, type), self time and wall share (ps); time some op runs, function run times."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if not paths:
        raise SystemExit(f"the profiler wrote no *.xplane.pb under {logdir}")
    space = xplane_pb2.XSpace()
    with open(paths[0], "rb") as handle:
        space.ParseFromString(handle.read())
    host = [plane for plane in space.planes if plane.name.startswith("/host:")]
    if not host:
        raise SystemExit(f"no host plane in the trace: {[plane.name for plane in space.planes]}")
    plane = host[0]
    segments, function_runs = [], []  # (start, end, key) stretches where an op is the innermost on its line
    functions = sorted({meta.name for meta in plane.stat_metadata.values() if meta.name.startswith("__inference_")})
    for line in plane.lines:
        ops = []
        for event in line.events:
            meta_name = plane.event_metadata[event.metadata_id].name
            if meta_name == "KernelAndDeviceFunc::Run":
                function_runs.append(event.duration_ps)
            match = OP_EVENT.match(meta_name)
            if match:
                start = line.timestamp_ns * 1000 + event.offset_ps
                ops.append((start, start + event.duration_ps, (match.group(1), match.group(2))))
        segments += innermost_segments(ops)
    self_ps, wall_ps = collections.Counter(), collections.Counter()
    boundaries = []
    for start, end, key in segments:
        if end > start:
            self_ps[key] += end - start
            boundaries += [(start, 1, key), (end, -1, key)]
    boundaries.sort(key=lambda item: (item[0], item[1]))
    active, previous, busy = collections.Counter(), None, 0
    for time_ps, change, key in boundaries:  # ops running side by side share the stretch equally
        if active and previous is not None and time_ps > previous:
            count = sum(active.values())
            for running, n in active.items():
                wall_ps[running] += (time_ps - previous) * n / count
            busy += time_ps - previous
        active[key] += change
        if active[key] == 0:
            del active[key]
        previous = time_ps
    return self_ps, wall_ps, busy, function_runs, functions


def profile(precision, args, logdir):
    keras.config.set_dtype_policy(precision)
    keras.utils.set_random_seed(0)
    if args.model == "bertlib":
        model, step = st.bertlib_model(args.jit, args.activation)
    else:
        model, step = st.keras_hub_model(args.jit)
    keras.config.set_dtype_policy("float32")
    data = st.batch()
    st.time_steps(step, data, args.warmup)  # trace the function and warm up outside everything measured
    plain = [st.time_steps(step, data, 1) for _ in range(args.steps)]
    tf.profiler.experimental.start(logdir)
    profiled = [st.time_steps(step, data, 1) for _ in range(args.steps)]
    tf.profiler.experimental.stop()
    self_ps, wall_ps, busy_ps, function_runs, functions = read_trace(logdir)
    nodes = function_graph(functions)
    softmax_grad, embedding_addn = softmax_gradient_ops(nodes), embedding_gradient_ops(nodes)
    scope = model.optimizer.name.lower()
    per_category, per_type, wall_category = collections.Counter(), collections.Counter(), collections.Counter()
    per_op = {}
    for (name, op_type), ps in self_ps.items():
        category = categorize(name, op_type, scope, softmax_grad, embedding_addn)
        per_category[category] += ps / 1e9 / args.steps  # ms per step
        per_type[(category, op_type)] += ps / 1e9 / args.steps
        per_op[(category, name, op_type)] = ps / 1e9 / args.steps
        wall_category[category] += wall_ps[(name, op_type)] / 1e9 / args.steps
    runs = sorted(function_runs)[-args.steps:]  # the step functions (longest KernelAndDeviceFunc::Run events)
    return dict(model=model, plain_ms=statistics.median(plain) * 1000, profiled_ms=statistics.median(profiled) * 1000,
                profiled_total_ms=sum(profiled) * 1000 / args.steps, function_ms=sum(runs) / 1e9 / args.steps,
                busy_ms=busy_ps / 1e9 / args.steps, per_category=per_category, wall_category=wall_category,
                per_op=per_op, per_type=per_type,
                graph_nodes=len(nodes), softmax_grad=len(softmax_grad), embedding_addn=len(embedding_addn),
                matched=sum(1 for name, _ in self_ps if name in nodes), ops=len(self_ps))


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="steps timed without the profiler, then profiled")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_bfloat16"])
    parser.add_argument("--preset", default="bench", choices=sorted(PRESETS),
                        help="bench: step_time.py's L4/H256/A4, batch 32, seq 128, 20 predictions; tiny: L2/H128")
    parser.add_argument("--batch", type=int, help="override the preset's batch size")
    parser.add_argument("--seq", type=int, help="override the preset's sequence length")
    parser.add_argument("--jit-compile", default="auto", help="auto, true or false (as step_time.py)")
    parser.add_argument("--activation", default="gelu_approximate", help="bertlib's GELU (as step_time.py)")
    parser.add_argument("--model", default="bertlib", choices=("bertlib", "keras_hub"),
                        help="whose step: bertlib's BertPretrainer or keras-hub's BertMaskedLM (step_time.py's two)")
    parser.add_argument("--no-peak", action="store_true", help="skip step_time.py's matmul-peak measurement")
    parser.add_argument("--top", type=int, default=4, help="op types listed under each category")
    parser.add_argument("--list", type=int, default=0, help="also list the N ops with the most self time")
    parser.add_argument("--smoke", action="store_true", help="tiny preset, batch 4, seq 32, 2 steps, no peak")
    args = parser.parse_args()
    if args.smoke:
        args.preset, args.batch, args.seq, args.steps, args.warmup, args.no_peak = "tiny", 4, 32, 2, 2, True
    args.jit = {"auto": "auto", "true": True, "false": False}[args.jit_compile.lower()]
    return args


def configure(args):
    """Set step_time.py's model size, batch and sequence length from `args`, print the machine and the step;
    returns the step's FLOPs."""
    overrides, st.BATCH, st.SEQ, st.PREDICTIONS = PRESETS[args.preset]
    st.SIZE.update(overrides)
    st.BATCH, st.SEQ = args.batch or st.BATCH, args.seq or st.SEQ
    st.PREDICTIONS = min(st.PREDICTIONS, st.SEQ)
    amx = sorted(flag for flag in open("/proc/cpuinfo").read().split() if flag.startswith("amx")) \
        if os.path.exists("/proc/cpuinfo") else []
    print(f"{st.cpu_model()}, AMX {sorted(set(amx)) or 'none'}, threads {st.THREADS}, load average "
          f"{os.getloadavg()}; TensorFlow {tf.__version__}, Keras {keras.__version__}")
    flops = st.step_flops(st.SIZE["num_layers"], st.SIZE["hidden_dim"], st.SIZE["intermediate_dim"],
                          st.SIZE["vocabulary_size"], st.BATCH, st.SEQ, st.PREDICTIONS)
    print(f"model {args.model}; preset {args.preset}: {st.SIZE}, batch {st.BATCH}, seq {st.SEQ}, "
          f"{st.PREDICTIONS} predictions; step {flops / 1e9:.1f} GFLOP; jit_compile {args.jit_compile}; "
          f"{args.steps} steps timed, then {args.steps} profiled, after {args.warmup} warm-up steps")
    return flops


def report(precision, result, args, flops, peak):
    """Print one precision's profile: self and wall time per category, the checks, the matmuls against the
    peak; sets `result["non_matmul"]`."""
    total = sum(result["per_category"].values())
    wall = result["profiled_total_ms"]
    print(f"\n== {precision} (resolved jit_compile {result['model'].jit_compile}); load {os.getloadavg()[0]:.1f}")
    print(f"{'category':18s} {'self ms':>8s} {'share':>6s} {'wall ms':>8s} {'of step':>7s}  largest op types "
          f"(self ms)")
    for category in CATEGORIES:
        ms, shared = result["per_category"][category], result["wall_category"][category]
        types = sorted(((v, t) for (c, t), v in result["per_type"].items() if c == category), reverse=True)
        listed = ", ".join(f"{t} {v:.1f}" for v, t in types[:args.top])
        print(f"{category:18s} {ms:8.1f} {ms / total:6.1%} {shared:8.1f} {shared / wall:7.1%}  {listed}")
    for (category, name, op_type), ms in sorted(result["per_op"].items(), key=lambda item: -item[1])[:args.list]:
        print(f"    {ms:7.2f} ms  {category:18s} {name}:{op_type}")
    idle = wall - result["busy_ms"]
    print(f"{'no op running':18s} {'':8s} {'':6s} {idle:8.1f} {idle / wall:7.1%}  (Keras/Python around the graph, "
          f"executor gaps)")
    matmul, matmul_wall = result["per_category"]["matmul"], result["wall_category"]["matmul"]
    print(f"{'total':18s} {total:8.1f} {1:6.0%} {wall:8.1f} {1:7.0%}  (self: summed over threads; wall: ops "
          f"running side by side share the time)")
    print(f"checks: step wall {result['plain_ms']:.1f} ms without the profiler, {wall:.1f} with it (median "
          f"{result['profiled_ms']:.1f}): profiler overhead {wall / result['plain_ms'] - 1:.0%}; graph function "
          f"{result['function_ms']:.1f} ms of it (Keras/Python around it {wall - result['function_ms']:.1f}); "
          f"some op running {result['busy_ms']:.1f} ms = {result['busy_ms'] / wall:.1%} of the profiled wall; "
          f"summed self time / profiled wall = {total / wall:.2f} (above 1: ops overlap on the inter-op threads)")
    print(f"graph: {result['matched']} of {result['ops']} traced op names found in the step's FunctionDef "
          f"({result['graph_nodes']} nodes; the rest are grappler's rewrites), {result['softmax_grad']} softmax-"
          f"gradient ops, {result['embedding_addn']} AddN of a densified embedding gradient")
    result["non_matmul"] = wall - matmul_wall
    print(f"matmuls hold the cores {matmul_wall:.1f} ms of the profiled step (self {matmul:.1f}); everything else "
          f"{result['non_matmul']:.1f} ms ({result['non_matmul'] / wall:.0%}); against the unprofiled step: "
          f"{result['plain_ms'] - matmul_wall:.1f} ms")
    if peak:
        print(f"matmul peak {peak:.0f} GFLOP/s: the step's {flops / 1e9:.1f} GFLOP need "
              f"{flops / peak / 1e6:.1f} ms at the peak (the matmuls ran at {flops / matmul_wall / 1e6:.0f} "
              f"GFLOP/s); step - that = "
              f"{result['plain_ms'] - flops / peak / 1e6:.1f} ms (the issue's way of counting); "
              f"MFU {flops / (result['plain_ms'] / 1000) / 1e9 / peak:.0%}")


def main():
    args = parse_arguments()
    flops = configure(args)
    results = {}
    for precision in args.precisions:
        peak = None
        if not args.no_peak:
            peak, _ = st.matmul_peak(keras.dtype_policies.get(precision).compute_dtype)
        with tempfile.TemporaryDirectory() as logdir:
            result = profile(precision, args, logdir)
        result["peak"] = peak
        results[precision] = result
        report(precision, result, args, flops, peak)
        results[precision]["short"] = SHORT.get(precision, precision)
    # Last line, the first precision: the profiled step's wall time minus the time the matmuls hold the cores.
    prefix = "" if args.model == "bertlib" else f"{args.model}_"
    for precision in args.precisions[1:]:
        print(f"{prefix}non_matmul_ms_per_step_{results[precision]['short']}: {results[precision]['non_matmul']:.1f}")
    first = results[args.precisions[0]]
    headline(f"{prefix}non_matmul_ms_per_step_{first['short']}", first["non_matmul"], unit="ms", digits=1,
             details={"step_ms": round(first["plain_ms"], 1)})


if __name__ == "__main__":
    main()
