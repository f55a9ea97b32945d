"""``factprobe init``: the DVC pipeline of a user's own repository, rendered from the templates
in ``files/`` (package data, so an installed wheel can write them)."""
