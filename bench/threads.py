"""The same training step under different CPU thread settings: each setting's rate and its spread.

Each setting runs in a fresh process (TensorFlow fixes its thread pools when it starts), 7 rounds of the same
steps; a round's time is reported with the process's CPU time over wall time (2.0 = both cores busy) and the
time its threads spent waiting for a core (`/proc/self/task/*/schedstat`: other processes on the machine).
The load average is printed before and after: on a shared machine the spreads are only comparable between
settings measured at the same load.

Settings:
    tensorflow-default  nothing set: TensorFlow sizes its pools itself
    bertlib             `bertlib.train.host.configure_cpu()`: intra-op and inter-op threads = usable cores,
                        and (tiny-fit) the dataset options of bertlib's pipelines (`data.input_options()`)
    inter-op-1          intra-op = usable cores, 1 inter-op thread (operations one after another)
    one-core            1 intra-op, 1 inter-op thread: what one core gives

Workloads:
    tiny-fit    `BertPretrainer(tiny).fit` on one in-memory batch (batch 32, seq 128), 20 steps a round: the
                case `pipeline.py` saw switch between 3.9 and 2.0 steps/s
    bench-step  `train_on_batch` at the bench size of `step_time.py` (L4/H256/A4, batch 32, seq 128), 5 steps
                a round

    python bench/threads.py [--workloads tiny-fit bench-step] [--settings ...] [--rounds 7]

Last line: `bertlib_spread_percent: X` (the slowest round over the fastest, minus 1, for the bertlib setting,
the largest over the workloads).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _record import headline  # bench/_record.py: the run's record

SETTINGS = ("tensorflow-default", "bertlib", "inter-op-1", "one-core")
WORKLOADS = {"tiny-fit": 20, "bench-step": 5}  # steps per round


def settings_env(setting, cores):
    env = {key: value for key, value in os.environ.items()
           if key not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow")
    if setting == "inter-op-1":
        env.update(TF_NUM_INTRAOP_THREADS=str(cores), TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS=str(cores))
    elif setting == "one-core":
        env.update(TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS="1")
    return env


def scheduler_seconds():
    """(running, waiting for a core) seconds summed over this process's threads."""
    running = waiting = 0
    for thread in os.listdir("/proc/self/task"):
        try:
            run, wait, _ = open(f"/proc/self/task/{thread}/schedstat").read().split()
        except (OSError, ValueError):
            continue
        running, waiting = running + int(run), waiting + int(wait)
    return running / 1e9, waiting / 1e9


def worker(setting, workload, rounds):
    if setting == "bertlib":
        from bertlib.train import host

        host.configure_cpu()
    import keras
    import numpy as np
    import tensorflow as tf

    from bertlib import BertBackbone, BertConfig, BertPretrainer

    rng = np.random.default_rng(0)
    batch, seq, predictions = 32, 128, 20
    inputs = {"token_ids": rng.integers(999, 30522, (batch, seq)).astype("int32"),
              "segment_ids": (np.arange(seq) >= seq // 2).astype("int32")[None].repeat(batch, 0),
              "padding_mask": np.ones((batch, seq), "int32"),
              "mask_positions": np.sort(rng.choice(seq, (batch, predictions)), axis=1).astype("int32")}
    labels = {"mlm_logits": rng.integers(999, 30522, (batch, predictions)).astype("int32")}
    weights = {"mlm_logits": np.ones((batch, predictions), "float32")}
    keras.utils.set_random_seed(0)
    if workload == "tiny-fit":
        config = BertConfig.preset("tiny", max_sequence_length=seq)
    else:
        config = BertConfig(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024,
                            vocabulary_size=30522, activation="gelu_approximate")
    model = BertPretrainer(BertBackbone(config), next_sentence=False)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4))
    steps = WORKLOADS[workload]
    if workload == "tiny-fit":
        dataset = tf.data.Dataset.from_tensors((inputs, labels, weights)).repeat()
        if setting == "bertlib":  # what bertlib's pipelines carry: on CPUs, tf.data's autotuner off
            from bertlib.text import data

            dataset = dataset.with_options(data.input_options())
        model.fit(dataset, steps_per_epoch=3, epochs=1, verbose=0)  # trace the step outside the rounds

        def run():
            model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
    else:
        def run():
            for _ in range(steps):
                model.train_on_batch(inputs, labels, sample_weight=weights)
        for _ in range(3):
            model.train_on_batch(inputs, labels, sample_weight=weights)
    records = []
    for _ in range(rounds):
        started, cpu, (_, waiting) = time.perf_counter(), time.process_time(), scheduler_seconds()
        run()
        wall = time.perf_counter() - started
        running_after, waiting_after = scheduler_seconds()
        records.append({"step_ms": 1000 * wall / steps, "cpu_over_wall": (time.process_time() - cpu) / wall,
                        "waiting_for_core": (waiting_after - waiting) / wall})
    print(json.dumps({"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                      "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
                      "threads": len(os.listdir("/proc/self/task")), "rounds": records}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", nargs=2, metavar=("SETTING", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker, args.rounds)

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from bertlib.train import host

    cores = host.usable_cpus()
    print(f"os.cpu_count() {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}, cgroup quota "
          f"{host.cgroup_cpu_limit()}, usable {cores}; load average {os.getloadavg()}")
    spreads = {}
    for workload in args.workloads:
        for setting in args.settings:
            load_before = os.getloadavg()[0]
            result = subprocess.run([sys.executable, __file__, "--worker", setting, workload,
                                     "--rounds", str(args.rounds)], env=settings_env(setting, cores),
                                    capture_output=True, text=True)
            if result.returncode:
                sys.exit(f"{setting} / {workload} failed:\n{result.stderr[-3000:]}")
            report = json.loads(result.stdout.strip().splitlines()[-1])
            times = [record["step_ms"] for record in report["rounds"]]
            spread = max(times) / min(times) - 1
            spreads[workload, setting] = spread
            print(f"{workload:10s} {setting:18s} median {statistics.median(times):7.1f} ms, fastest "
                  f"{min(times):7.1f}, slowest {max(times):7.1f}, spread {spread:6.1%}; CPU/wall "
                  + " ".join(f"{record['cpu_over_wall']:.2f}" for record in report["rounds"])
                  + f"; waiting for a core {statistics.mean(r['waiting_for_core'] for r in report['rounds']):.2f}"
                  f"; load {load_before:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
            print("    rounds ms: " + " ".join(f"{value:.0f}" for value in times), flush=True)
    bertlib = [spreads[key] for key in spreads if key[1] == "bertlib"]
    if bertlib:
        headline("bertlib_spread_percent", 100 * max(bertlib), unit="%", digits=1)


if __name__ == "__main__":
    main()
