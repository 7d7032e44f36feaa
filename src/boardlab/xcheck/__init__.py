"""Cross-checks: a boardlab I/O workload against the established tool for the same job (fio, iperf3).

Each check builds both commands from one description of the job, runs them interleaved A B A B with the
same CPU pinning, parses the reference's JSON robustly (`jsonrobust`) and reports, per metric, every pair
and the median of the pairwise ratios boardlab / reference (`pairs`). `storage` and `net` hold the
job-to-command translations.
"""
