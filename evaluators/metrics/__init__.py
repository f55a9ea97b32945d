"""Metrics: small pure functions over outputs tables (see each function's doctest and
docs/metrics/). Each method's full set, as written to ``metrics.json``, is in
:mod:`.suites` (one module per method); what they share is in :mod:`.suite`."""
from factprobe.evaluators.metrics.belief import (
                                       acc1_fluctuation,
                                       bias_level,
                                       consistency,
                                       coverage,
                                       covered_units,
                                       overconfidence,
                                       sharing_rate,
)
from factprobe.evaluators.metrics.belief_icl import one_word_rate, sample_confidence
from factprobe.evaluators.metrics.monitor import fact_distances, frame_accuracy, monitor_score
from factprobe.evaluators.metrics.stats import auroc, bootstrap, paired_test
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.suites.belief import belief_metrics
from factprobe.evaluators.metrics.suites.belief_icl import belief_icl_metrics
from factprobe.evaluators.metrics.suites.monitor import monitor_metrics
from factprobe.evaluators.metrics.suites.prompt import prompt_metrics
from factprobe.evaluators.metrics.suites.zp_lke import zp_lke_metrics
from factprobe.evaluators.metrics.validity import validity
from factprobe.evaluators.metrics.zp_lke import (
                                       accuracy_at_k,
                                       mc_accuracy,
                                       mc_predictions,
                                       probability_mass,
                                       response_accuracy,
                                       subsumption_matrix,
                                       subsumption_rate,
)

__all__ = ["acc1_fluctuation", "accuracy_at_k", "auroc", "belief_icl_metrics", "belief_metrics",
           "bias_level", "bootstrap", "consistency", "coverage", "covered_units",
           "fact_distances", "frame_accuracy", "mc_accuracy", "mc_predictions",
           "MetricsOptions", "monitor_metrics", "monitor_score", "one_word_rate",
           "overconfidence", "paired_test", "probability_mass", "prompt_metrics",
           "response_accuracy", "sample_confidence", "sharing_rate", "subsumption_matrix",
           "subsumption_rate", "validity", "zp_lke_metrics"]
