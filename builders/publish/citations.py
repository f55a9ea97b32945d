"""BibTeX for the three papers whose datasets and methods factprobe implements, and for factprobe.

Each entry gives title, authors, year, venue and url, checked against the papers' own texts and
their public records:

- ZP-LKE: the ACM reference format printed in the paper (WSDM '25, DOI); arXiv 2404.12957 is
  its web version.
- BELIEF: the version factprobe implements is arXiv 2406.12277 (v1, 2024), under the title
  below, which is how the ZP-LKE paper cites it (its reference list: "arXiv preprint
  arXiv:2406.12277 (2024)"). Later arXiv versions carry the title "What Matters in Memorizing
  and Recalling Facts? Multifaceted Benchmarks for Knowledge Probing in Language Models".
- MONITOR: arXiv 2310.09820 (October 2023); the authors' publication page lists it in the
  Proceedings of NAACL-HLT 2024.

A field we could not confirm (page numbers, an anthology id) is left out rather than guessed:
a wrong field in a published card is worse than a missing one.
"""
from __future__ import annotations

import re

from factprobe.core.tables import factprobe_version

ZP_LKE = """@inproceedings{wu2025zplke,
  title         = {Towards Reliable Latent Knowledge Estimation in {LLMs}: Zero-Prompt Many-Shot Based Factual Knowledge Extraction},
  author        = {Wu, Qinyuan and Khan, Mohammad Aflah and Das, Soumi and Nanda, Vedant and Ghosh, Bishwamittra and Kolling, Camila and Speicher, Till and Bindschaedler, Laurent and Gummadi, Krishna and Terzi, Evimaria},
  booktitle     = {Proceedings of the Eighteenth ACM International Conference on Web Search and Data Mining (WSDM '25)},
  publisher     = {ACM},
  year          = {2025},
  doi           = {10.1145/3701551.3703562},
  url           = {https://doi.org/10.1145/3701551.3703562},
  eprint        = {2404.12957},
  archivePrefix = {arXiv}
}"""

BELIEF = """@misc{zhao2024belief,
  title         = {What Matters in Learning Facts in Language Models? Multifaceted Knowledge Probing with Diverse Multi-Prompt Datasets},
  author        = {Zhao, Xin and Yoshinaga, Naoki and Oba, Daisuke},
  howpublished  = {arXiv preprint arXiv:2406.12277},
  year          = {2024},
  url           = {https://arxiv.org/abs/2406.12277},
  eprint        = {2406.12277},
  archivePrefix = {arXiv},
  note          = {BELIEF, BELIEF-ICL and the MyriadLAMA dataset}
}"""

MONITOR = """@inproceedings{wang2024monitor,
  title         = {Assessing the Reliability of Large Language Model Knowledge},
  author        = {Wang, Weixuan and Haddow, Barry and Birch, Alexandra and Peng, Wei},
  booktitle     = {Proceedings of the 2024 Conference of the North American Chapter of the Association for Computational Linguistics: Human Language Technologies (NAACL 2024)},
  year          = {2024},
  url           = {https://arxiv.org/abs/2310.09820},
  eprint        = {2310.09820},
  archivePrefix = {arXiv},
  note          = {MONITOR and the FKTC test set; code: https://github.com/Vicky-Wil/MONITOR}
}"""

PAPERS = {"zp-lke": ZP_LKE, "belief": BELIEF, "monitor": MONITOR}


def bibtex_fields(entry: str) -> dict[str, str]:
    """The ``name = {value}`` fields of one BibTeX entry (values without the outer braces).

    >>> bibtex_fields("@misc{k,\\n  title = {A {B} c},\\n  year  = {2024}\\n}")
    {'title': 'A {B} c', 'year': '2024'}
    """
    return {m.group(1): m.group(2)
            for m in re.finditer(r"^\s*(\w+)\s*=\s*\{(.*)\},?\s*$", entry, re.MULTILINE)}


def toolkit_bibtex(version: str | None = None) -> str:
    """BibTeX for the factprobe release that exported a dataset: the version identifies it
    (the toolkit has no paper, and a release date would be a guess).

    >>> print(toolkit_bibtex("1.2.3").splitlines()[3])
      version = {1.2.3},
    """
    return ("@software{factprobe,\n"
            "  title   = {factprobe: factual-knowledge probing datasets from knowledge graphs},\n"
            "  author  = {{factprobe contributors}},\n"
            f"  version = {{{version or factprobe_version()}}},\n"
            "  note    = {Python toolkit; command `factprobe`}\n"
            "}")
