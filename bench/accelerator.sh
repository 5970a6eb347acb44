#!/usr/bin/env bash
# One prepared run for a lent accelerator (issue 37, item 5; issue 58, item 5): everything in one go, each part
# timed, limited and logged, so that one call records it all and fits in one device call (10 minutes) on one GPU.
#
#   bash bench/accelerator.sh                  # on the accelerator machine: every part, at most 10 minutes there
#   bash bench/accelerator.sh --only pretrain  # issue 58's A/B of the levers alone: about 6 minutes at most
#   bash bench/accelerator.sh --smoke          # the same parts on the CPU, tiny sizes (what the test runs)
#
# Parts, in this order (each under its own `timeout`; one that fails or runs out of time is reported and the next
# runs; `--only NAME[,NAME]` runs those alone):
#   pretrain                   bench/pretrain_mfu.py: BERT-BASE, batch 256 x 128, mixed bfloat16, XLA, through
#                              bertlib.train.pretraining.pretrain (the `bertlib pretrain` path): step time, tokens/s, MFU
#                              against the chip's published peak, once per variant of PRETRAIN_VARIANTS in one process
#                              (--smoke: the 2-layer tiny preset on the CPU, two variants)
#   ch00-tensorflow, ch00-jax  chapter 00 through tools/run_notebook.py, full mode, into OUT/<backend>/ (never
#                              over the stored notebook); --smoke runs a two-cell stand-in the same way (course
#                              set-up, the backend's name), since CI's nbval already runs chapter 00 on both
#   step-time                  bench/step_time.py (bertlib against keras-hub, float32 and mixed bfloat16, on
#                              TensorFlow where it is installed, else JAX; --smoke: 1 round of 1 step, float32,
#                              bertlib only)
# Output: OUT (the device tool's folder) or build/accelerator: one log per part and summary.txt, which ends
# with one line per part (`part NAME: ok|FAILED (...)|TIMED OUT (...)|NOT RUN (...) in S s`), one `pretrain variant
# ...` line per variant and `pretrain mfu: X` (the best variant at 256 x 128 that keeps A.2's dropout). Exit status: 0
# when every part that ran passed, else 1.
#
# The levers (issue 58, item 5), each off unless a variant switches it on, so the variants are an A/B of each:
# `--steps-per-execution K` (the loss read back once per K steps instead of every step), `--prefetch N` (numpy
# batches masked N ahead in a thread; the GPU image has no TensorFlow), `--random-bits rbg` (dropout's bits from
# JAX's rbg generator instead of threefry), `--attention fused --dropout 0` (keras.ops.dot_product_attention: flash
# kernels, which drop nothing, so only without dropout: a recipe change, measured, not the headline), and the same
# at 512 tokens (batch 64, the same tokens a step). PRETRAIN_VARIANTS replaces the list (';' between variants).
#
# Environment: BERTLIB_DATA (default: shared/data in this tree, else ../shared/data, as the Makefile);
# PYTHON (default .venv/bin/python if present, else python3); PEAK_TFLOPS (passed to
# pretrain_mfu.py as --peak-tflops); PRETRAIN_BACKEND (tensorflow or jax; default: tensorflow when it imports);
# PRETRAIN_VARIANTS (see above).
# A folder .whl/ of wheels, where present, is installed first with pip --no-index (no network is needed or
# used): the way to bring packages the machine lacks (bench/RESULTS.md, "bench/accelerator.sh").
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
SMOKE=0 ONLY=
ALL_PARTS=pretrain,ch00-tensorflow,ch00-jax,step-time
while (($#)); do
  case "$1" in
    --smoke) SMOKE=1 ;;
    --only) [[ $# -ge 2 ]] || { echo "bench/accelerator.sh: --only needs the parts, e.g. --only pretrain." >&2; exit 2; }
            ONLY=$2; shift ;;
    --only=*) ONLY=${1#--only=} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/accelerator.sh: unknown argument '$1'; expected --smoke, --only PARTS or --help." >&2; exit 2 ;;
  esac
  shift
done
for name in ${ONLY//,/ }; do
  if [[ ",$ALL_PARTS," != *",$name,"* ]]; then
    echo "bench/accelerator.sh: unknown part '$name' in --only; expected some of $ALL_PARTS." >&2; exit 2
  fi
done
wanted() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT_DIR=${OUT:-$ROOT/build/accelerator}
mkdir -p "$OUT_DIR"
SUMMARY=$OUT_DIR/summary.txt
# The benches' records (bench/_record.py) go with the logs, not into this copy's bench/records.jsonl.
export BERTLIB_BENCH_RECORDS=${BERTLIB_BENCH_RECORDS:-$OUT_DIR/records.jsonl}
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=$ROOT/.venv/bin/python; else PYTHON=python3; fi
fi
if compgen -G ".whl/*.whl" >/dev/null; then  # carried wheels: install offline, outside the system's packages
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/accelerator-site \
    .whl/*.whl || echo "bench/accelerator.sh: installing the wheels in .whl/ failed (above); going on without them" >&2
  export PYTHONPATH=/tmp/accelerator-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$ROOT:$ROOT/course:$ROOT/coursekit${PYTHONPATH:+:$PYTHONPATH}  # the three packages from this tree, installed or not
if [[ -z "${BERTLIB_DATA+set}" ]]; then  # the datasets chapter 00 reads (SST-2), as the Makefile finds them
  for folder in "$ROOT/shared/data" "$ROOT/../shared/data"; do
    if [[ -d "$folder" ]]; then export BERTLIB_DATA=$(cd "$folder" && pwd); break; fi
  done
fi
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}

if ((SMOKE)); then  # the CPU only, whatever the machine has
  export CUDA_VISIBLE_DEVICES="" JAX_PLATFORMS=cpu
  LIMIT_CH00=120 LIMIT_STEP=180  # generous: a loaded 2-core CI machine
  CH00_MODE=() STEP_ARGS=(--rounds 1 --steps 1 --precisions float32 --libraries bertlib)
  CHAPTER=$OUT_DIR/smoke_chapter.ipynb
  if "$PYTHON" - "$CHAPTER" <<'PY'
import sys, nbformat
cells = ["import bertlib_course as course\n\ncourse.setup(seed=0)", "import keras\n\nprint(keras.backend.backend())"]
nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), sys.argv[1])
PY
  then :; else echo "could not write the stand-in chapter $CHAPTER; its parts will fail" >&2; fi
  PRETRAIN_ARGS=(--preset tiny --batch-size 8 --seq-length 64 --steps 6 --log-every 2)
  LIMIT_PRETRAIN=300 VARIANTS=${PRETRAIN_VARIANTS:-"base; --steps-per-execution 2 --prefetch 2"}
else  # at most 360 + 120 + 100 s where TensorFlow is missing (the GPU image), 120 more with it; 5 s more each if killed
  LIMIT_CH00=120 LIMIT_STEP=100 LIMIT_PRETRAIN=360
  CH00_MODE=(--full) STEP_ARGS=(--rounds 3 --steps 10) CHAPTER=notebooks/00_big_picture.ipynb
  PRETRAIN_ARGS=(--preset base --batch-size 256 --seq-length 128 --steps 60 --log-every 10)
  LEVERS="--steps-per-execution 10 --prefetch 2"  # the two that keep the numbers
  LONG="--seq-length 512 --batch-size 64 --max-predictions 80"  # the long phase of A.2, the same tokens a step
  # The most telling first (a part that runs out of time keeps the lines of the variants it finished): every lever
  # that keeps the recipe, then each alone, then fused attention without dropout, then the same at 512 tokens.
  VARIANTS=${PRETRAIN_VARIANTS:-"base; $LEVERS --random-bits rbg; --steps-per-execution 10; --prefetch 2;
    --random-bits rbg; $LEVERS --attention fused --dropout 0; $LONG $LEVERS --random-bits rbg;
    $LONG $LEVERS --attention fused --dropout 0"}
fi
PRETRAIN_ARGS+=(--precision mixed_bfloat16 --json "$OUT_DIR/pretrain.json" --variants "${VARIANTS//$'\n'/ }")
[[ -n "${PEAK_TFLOPS:-}" ]] && PRETRAIN_ARGS+=(--peak-tflops "$PEAK_TFLOPS")
[[ -n "${PRETRAIN_BACKEND:-}" ]] && PRETRAIN_ARGS+=(--backend "$PRETRAIN_BACKEND")
installed() { "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }
# step_time.py's backend: TensorFlow where it is installed (the CPU figures of bench/RESULTS.md), else JAX (the lent
# GPU's image has JAX and no TensorFlow).
if installed tensorflow; then STEP_BACKEND=tensorflow; else STEP_BACKEND=jax; fi
if ((!SMOKE)) && wanted step-time; then  # keras-hub on that backend (it imports Keras), else bertlib alone
  KERAS_BACKEND=$STEP_BACKEND "$PYTHON" -c "import keras_hub" 2>/dev/null || STEP_ARGS+=(--libraries bertlib)
fi

say "bench/accelerator.sh $( ((SMOKE)) && echo --smoke)${ONLY:+ --only $ONLY} at" \
  "$(git rev-parse --short=12 HEAD 2>/dev/null || echo '?'), $(date -u +%FT%TZ)"
say "python: $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])' 2>&1)"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo none)"
say "cpus: $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"

FAILED=0
# part NAME SECONDS COMMAND...: run COMMAND under a time limit, its output shown and kept in OUT/NAME.log.
part() {
  local name=$1 limit=$2 rc started seconds state
  shift 2
  echo "=== part $name (at most ${limit} s): $*"
  started=$(date +%s.%N)
  set +e
  timeout --kill-after=5 "$limit" "$@" 2>&1 | tee "$OUT_DIR/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  case $rc in
    0) state=ok ;;
    124|137) state="TIMED OUT (limit ${limit} s)"; FAILED=1 ;;
    *) state="FAILED (exit $rc; last line: $(grep -v '^\s*$' "$OUT_DIR/$name.log" | tail -n 1 | cut -c1-200 || true))"
       state=${state/last line: )/no output)}; FAILED=1 ;;
  esac
  say "part $name: $state in $seconds s"
}

if wanted pretrain; then  # first: the figure a lent device is for
  part pretrain "$LIMIT_PRETRAIN" "$PYTHON" bench/pretrain_mfu.py "${PRETRAIN_ARGS[@]}"
fi
for backend in tensorflow jax; do
  wanted "ch00-$backend" || continue
  if ! installed "$backend"; then  # a part that cannot start: said at once, no time spent
    say "part ch00-$backend: NOT RUN ($backend is not installed for $PYTHON) in 0.0 s"; FAILED=1; continue
  fi
  part "ch00-$backend" "$LIMIT_CH00" "$PYTHON" tools/run_notebook.py "${CH00_MODE[@]}" --backend "$backend" \
    --output-dir "$OUT_DIR/$backend" "$CHAPTER"
done
if wanted step-time; then
  part step-time "$LIMIT_STEP" env KERAS_BACKEND="$STEP_BACKEND" "$PYTHON" bench/step_time.py "${STEP_ARGS[@]}"
fi

for name in step-time pretrain; do  # the headlines, from the logs: the bench's `name: value` lines, each variant's
  grep -E '^[a-z_0-9]+: [-0-9.]+$|^variant ' "$OUT_DIR/$name.log" 2>/dev/null | sed "s/^/$name /" | tee -a "$SUMMARY" \
    || true
done
if ((FAILED)); then say "accelerator.sh: some parts failed (above); logs in $OUT_DIR"; exit 1; fi
say "accelerator.sh: every part passed; logs in $OUT_DIR"
