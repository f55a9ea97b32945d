"""Facts sources and their clients. The sources ``build facts`` offers are the table in
:mod:`factprobe.builders.sources.table`."""
