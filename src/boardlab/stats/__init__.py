"""Statistics for boardlab: pure functions that cite their method (docs/method.md;
research/anchors-methodology.md).

Standard library only (the on-board path has no numpy or scipy). Every function is pure: no I/O, no
printing, no global state but a bounded memo of pure answers (`_memo`: a cell's drift check and bimodality,
asked again by each comparison); randomness comes from an explicit `random.Random(seed)`, so results are
reproducible. Inputs are per-run values, one number per run; `run_values` reduces each run's iterations to
its median. Results are frozen dataclasses (`dataclasses.asdict` turns them into plain data).

Typical use in a report:

    cells = {name: summarize(runs) for name, runs in ...}
    comps = [compare(base, cond, higher_is_better=hib, delta=DEFAULT_DELTA, seed=i) for ...]
    comps = adjust(comps, "auto")      # one family: Holm up to 50 comparisons, Benjamini-Hochberg above

`compare` decides on Yuen's trimmed t of log values (`yuen_welch`); `repetitions_for_power` gives the runs per
arm that detect an effect; `comparison_flags` names misbehaving cells.
"""

from boardlab.stats.compare import Comparison, adjust, compare
from boardlab.stats.drift import DriftCheck, drift_check
from boardlab.stats.flags import Bimodality, bimodality, comparison_flags
from boardlab.stats.histogram import HistogramPercentile, histogram_percentiles, merge_histograms
from boardlab.stats.hypothesis import (
    RankCorrelation,
    RankTest,
    mann_whitney_u,
    spearman,
    wilcoxon_signed_rank,
)
from boardlab.stats.multiple import benjamini_hochberg, holm
from boardlab.stats.power import PowerAdvice, repetitions_for_power, simulated_power
from boardlab.stats.reach import Reachability, reachability, smallest_p
from boardlab.stats.sample_size import RunPrediction, StopDecision, predict_runs, should_stop
from boardlab.stats.summary import (
    CellSummary,
    Interval,
    TukeyOutliers,
    mad,
    mean_t_interval,
    median_ci_bootstrap,
    median_ci_order_statistic,
    percentile,
    run_values,
    summarize,
    tukey_outliers,
)
from boardlab.stats.tails import TAIL_MIN_SAMPLES, compare_tail, pooled_quantile
from boardlab.stats.threshold import DEFAULT_DELTA, DEFAULT_TAIL_DELTA, family_method
from boardlab.stats.trimmed import TrimmedT, trimmed_one_sample, yuen_welch
from boardlab.stats.verdict import (
    Confounding,
    RunEnvironment,
    Verdict,
    VerdictKind,
    check_confounders,
    decide,
)

__all__ = [
    "Bimodality",
    "PowerAdvice",
    "TrimmedT",
    "bimodality",
    "comparison_flags",
    "repetitions_for_power",
    "simulated_power",
    "trimmed_one_sample",
    "yuen_welch",
    "DEFAULT_DELTA",
    "DEFAULT_TAIL_DELTA",
    "Reachability",
    "TAIL_MIN_SAMPLES",
    "CellSummary",
    "Comparison",
    "Confounding",
    "DriftCheck",
    "HistogramPercentile",
    "Interval",
    "RankCorrelation",
    "RankTest",
    "RunEnvironment",
    "RunPrediction",
    "StopDecision",
    "TukeyOutliers",
    "Verdict",
    "VerdictKind",
    "adjust",
    "benjamini_hochberg",
    "check_confounders",
    "compare",
    "compare_tail",
    "decide",
    "drift_check",
    "family_method",
    "histogram_percentiles",
    "holm",
    "mad",
    "mann_whitney_u",
    "mean_t_interval",
    "median_ci_bootstrap",
    "median_ci_order_statistic",
    "merge_histograms",
    "percentile",
    "pooled_quantile",
    "predict_runs",
    "reachability",
    "run_values",
    "should_stop",
    "smallest_p",
    "spearman",
    "summarize",
    "tukey_outliers",
    "wilcoxon_signed_rank",
]
