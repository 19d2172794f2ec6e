"""The workers: what takes jobs from the ledger and runs them on a slot (a GPU, or a CPU on a GPU-less host).

::

    worker.py       the Worker: its slots, compile and maintenance threads, claiming and heartbeats
    jobs.py         one running job: the GPU-lease gate (the lease covers GPU work only), claim renewals,
                    the record of how it ended
    contract.py     what a worker and a runner agree on (JobSpec, JobResult, Heartbeat, JobRunner)
    runners.py      SandboxRunner (warm judges per slot, several lanes per GPU) and SubprocessRunner (any
                    child process)
    gpus.py         slots: GPUs found through NVML, or CPU slots; their health checks
    gpu_audit.py    NVML's per-GPU process lists sampled during a run: is every process pinned to its GPU?
    local_eval.py   ``solforge eval`` handing its job to a running local worker

``solforge worker`` itself is :mod:`solforge.server.cli_worker`. Candidate code never runs here: a runner
hands each job to a judge process (solforge.sandbox), which starts the candidate's own process.
"""
