"""What a run costs, counted and measured: the FLOP arithmetic of chapters 05, 05x and 08, and a CPU timer.

Counting convention (the chapters and their exercises use the same): a multiply-add is 2 FLOPs. Per layer and
token, the Q, K, V and output projections cost 4·H² multiply-adds and the feed-forward layer 2·H·F; a query
attending to n keys costs n·H multiply-adds for QKᵀ and n·H for the weighted sum of values. Training costs
about 3 times the forward pass: 6N FLOPs per token for N parameters, plus the attention term 12·L·n·H.

Example:
>>> from bertlib import BertConfig
>>> base = BertConfig.preset("base")
>>> linear, quadratic = forward_flops_per_sequence(base, 512)
>>> round(quadratic / (linear + quadratic), 3)   # attention's share of BERT_BASE's forward FLOPs at 512
0.1
"""

import time

PETAFLOP_S_DAY = 1e15 * 86_400  # FLOPs in one petaflop/s-day
TERAFLOP_S_DAY = 1e12 * 86_400


def forward_flops_per_sequence(config, length):
    """Forward FLOPs of one sequence of `length` tokens through the encoder, split by how they grow.

    Args:
        config: a `BertConfig` (num_layers, hidden_dim, intermediate_dim are read).
        length: int, tokens in the sequence.

    Returns:
        (linear, quadratic): the projections and feed-forward layers (grow with n), and QKᵀ plus AV (grow
        with n²).
    """
    hidden, layers = config.hidden_dim, config.num_layers
    linear = layers * length * 2 * (4 * hidden * hidden + 2 * hidden * config.intermediate_dim)
    quadratic = layers * 2 * 2 * length * length * hidden
    return linear, quadratic


def training_flops_per_token(config, length, parameters=None):
    """Training FLOPs per token: 6 per parameter (2 forward, 4 backward) plus attention, 12·L·n·H.

    `parameters` is the count the estimate uses (the paper's rounded 110e6); it defaults to the exact count,
    `config.num_params()`.
    """
    parameters = config.num_params() if parameters is None else parameters
    attention = 12 * config.num_layers * length * config.hidden_dim  # QKᵀ and AV, forward + backward
    return 6 * parameters + attention


def run_flops(config, parameters, schedule, steps=1_000_000, batch=256):
    """Training FLOPs of a run whose steps are split over sequence lengths.

    Args:
        config: a `BertConfig`.
        parameters: float, N in 6N; None for `config.num_params()`.
        schedule: list of (length, share of the steps), e.g. [(128, 0.9), (512, 0.1)] (A.2's curriculum).
        steps: int, defaults to 1,000,000 (A.2).
        batch: int, sequences per step, defaults to 256 (A.2).
    """
    return sum(share * steps * batch * length * training_flops_per_token(config, length, parameters)
               for length, share in schedule)


def curriculum_cost(schedule, hidden_dim, intermediate_dim=None):
    """Cost of a length schedule as a share of running every step at its longest length (one encoder block,
    the same number of sequences per step). The feed-forward width defaults to 4·H, as in BERT (§3).

    Example: `curriculum_cost([(128, 0.9), (512, 0.1)], 768)` is about 0.31.
    """
    intermediate_dim = 4 * hidden_dim if intermediate_dim is None else intermediate_dim

    def per_sequence(length):
        return length * (2 * (4 * hidden_dim**2 + 2 * hidden_dim * intermediate_dim) + 4 * length * hidden_dim)

    longest = max(length for length, _ in schedule)
    return sum(share * per_sequence(length) for length, share in schedule) / per_sequence(longest)


def last_block_saving(config, length, predictions):
    """Share of the encoder's forward FLOPs saved when the last block computes only the rows the heads read.

    The heads read the `predictions` masked slots and [CLS]. The last block's keys and values still need every
    position; its queries, attention output, feed-forward layer (and the scores of those rows) do not
    (`bertlib.BertBackbone.hidden_states_at`).
    """
    hidden, intermediate = config.hidden_dim, config.intermediate_dim
    full_block = 2 * length * (4 * hidden * hidden + 2 * hidden * intermediate) + 4 * length * length * hidden
    rows = predictions + 1
    trimmed_block = (2 * length * 2 * hidden * hidden                      # keys and values: every position
                     + 2 * rows * (2 * hidden * hidden + 2 * hidden * intermediate)  # queries, output, FFN
                     + 4 * rows * length * hidden)                          # those rows' scores and values
    return (full_block - trimmed_block) / (config.num_layers * full_block)


def best_cpu_times(functions, repeats):
    """The least CPU time, in seconds, of each function over `repeats` turns.

    CPU time (`time.process_time`, summed over threads) counts the work done, which other programs on a shared
    machine disturb far less than wall-clock time. Each function runs once first (tracing, building), and the
    functions take turns, so a busy spell hits all of them alike.

    Args:
        functions: dict of name -> function without arguments.
        repeats: int, turns per function.

    Returns:
        dict of name -> seconds.
    """
    for function in functions.values():
        function()
    times = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.process_time()
            function()
            times[name].append(time.process_time() - start)
    return {name: min(values) for name, values in times.items()}
