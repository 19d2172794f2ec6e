"""solforge.sandbox.sol: the speed of light and the score, in one place (docs/design.md section 3).

::

    counting.py    FLOPs and bytes of a workload, from the reference traced on meta tensors
    cost_rules.py  the tally, and the FLOPs each aten operator is charged
    tracing.py     the reference run under the counting modes, on meta tensors or real inputs
    count_cache.py meta counts kept in the process, on disk and in the shipped table
    hardware.py    GPU specs (the datasheet table), NVML: detection, clocks, health
    calibrate.py   ``solforge calibrate``: measured copy bandwidth and matrix rates, saved per GPU
    peaks.py       the peaks to score against: the calibration when there is one, else the datasheet
    score.py       T_SOL, the physical floor, the SOL score, speedups, geomean, problem and submission
                   aggregates

Everything else (the judge, the tools, the ledger's queue, the report) calls these; no score formula
lives anywhere else. None of it imports torch at module level.
"""
