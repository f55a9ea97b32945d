"""factprobe: factual-knowledge probing datasets from knowledge graphs, and the probing methods
of ZP-LKE, BELIEF and MONITOR."""
