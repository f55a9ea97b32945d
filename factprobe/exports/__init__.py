"""``factprobe export``: a dataset in the layout another probing tool reads
(lm-evaluation-harness tasks, lm-pub-quiz / BEAR datasets). See docs/exports.md."""
