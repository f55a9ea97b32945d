"""Publishing a built dataset on the Hugging Face Hub, by job:

- :mod:`~factprobe.builders.publish.export`: a dataset folder <-> the Hub layout (``data/``, the layout
  file that turns it back byte for byte);
- :mod:`~factprobe.builders.publish.card`: the dataset card (YAML header and body), its sections in
  :mod:`~factprobe.builders.publish.card_sections`;
- :mod:`~factprobe.builders.publish.citations`: what the card asks users to cite;
- :mod:`~factprobe.builders.publish.upload`: ``factprobe publish`` itself (export, then ``HfApi``).

Reading a dataset back from the Hub (``hf://``, a Hub-layout folder) is not here: every layer
does it, through :mod:`factprobe.builders.inputs` and :mod:`factprobe.builders.open`.
"""
