"""BibTeX for the three papers whose datasets and methods factprobe implements, and for factprobe.

Written by hand from the papers' own texts (their arXiv versions), with only the fields those texts
state: a field missing here (a year, a venue) is one the text we had did not confirm, and a
guessed field in a published card is worse than an absent one.
"""
from __future__ import annotations

from builders.core.tables import factprobe_version

# The WSDM '25 version: the ACM reference format printed in the paper gives authors, venue and
# DOI; the arXiv id is that of the web version (arxiv.org/html/2404.12957).
ZP_LKE = """@inproceedings{wu2025zplke,
  title     = {Towards Reliable Latent Knowledge Estimation in {LLMs}: Zero-Prompt Many-Shot Based Factual Knowledge Extraction},
  author    = {Wu, Qinyuan and Khan, Mohammad Aflah and Das, Soumi and Nanda, Vedant and Ghosh, Bishwamittra and Kolling, Camila and Speicher, Till and Bindschaedler, Laurent and Gummadi, Krishna and Terzi, Evimaria},
  booktitle = {Proceedings of the Eighteenth ACM International Conference on Web Search and Data Mining (WSDM '25)},
  year      = {2025},
  doi       = {10.1145/3701551.3703562},
  eprint    = {2404.12957},
  archivePrefix = {arXiv}
}"""

# The seed is an anonymous submission: no venue or year. The authors' given names come from
# their own earlier paper, which the seed cites (Xin Zhao, Naoki Yoshinaga, Daisuke Oba).
BELIEF = """@misc{zhao-belief,
  title  = {What Matters in Learning Facts in Language Models? Multifaceted Knowledge Probing with Diverse Multi-Prompt Datasets},
  author = {Zhao, Xin and Yoshinaga, Naoki and Oba, Daisuke},
  note   = {BELIEF, BELIEF-ICL and the MyriadLAMA dataset}
}"""

# The seed names authors and affiliations but no venue or year.
MONITOR = """@misc{wang-monitor,
  title  = {Assessing the Reliability of Large Language Model Knowledge},
  author = {Wang, Weixuan and Haddow, Barry and Birch, Alexandra and Peng, Wei},
  note   = {MONITOR and the FKTC test set; code: https://github.com/Vicky-Wil/MONITOR}
}"""

PAPERS = {"zp-lke": ZP_LKE, "belief": BELIEF, "monitor": MONITOR}


def toolkit_bibtex(version: str | None = None) -> str:
    """BibTeX for the factprobe release that exported a dataset.

    >>> print(toolkit_bibtex("1.2.3").splitlines()[3])
      version = {1.2.3},
    """
    return ("@software{factprobe,\n"
            "  title   = {factprobe: factual-knowledge probing datasets from knowledge graphs},\n"
            "  author  = {{factprobe contributors}},\n"
            f"  version = {{{version or factprobe_version()}}},\n"
            "  note    = {Python toolkit; command `factprobe`}\n"
            "}")
