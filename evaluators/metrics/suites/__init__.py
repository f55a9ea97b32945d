"""Each method's full metric set, one module per method: the function that turns
``outputs.parquet`` (+ ``planted.json``, the method config) into the dict written to
``metrics.json``, and the :class:`~factprobe.evaluators.metrics.suite.MethodMetrics` that tells the eval
runner and ``factprobe report`` what it reads and which numbers it headlines. The table of
methods (:mod:`factprobe.evaluators.methods`) names them."""
