"""``factprobe report --html``: a self-contained page to look at what a model knows, fact by
fact (docs/metrics/report.md). :mod:`.page` writes it, :mod:`.bundle` gathers its data from
the report's tables and the runs, :mod:`.facts` reads the datasets and planted lists,
:mod:`.details` turns each method's output rows into what the drill-down shows; ``static/``
holds the page's template, script and styles, ``vendor/`` the charting library (see
``vendor/fetch.sh`` for why it is vendored and how it is re-fetched)."""
