"""Where each import package's folder is (everything else is in pyproject.toml).

The installed import names all live under ``factprobe`` -- ``factprobe.builders``,
``factprobe.probes``, ``factprobe.evaluators`` beside the kernel ``factprobe.core`` and the app
layer ``factprobe.cli`` -- so a user's own ``probes/`` package, or another distribution's
``evaluators``, cannot collide with them. The folders keep the repository's top-level layout
(builders/, probes/, evaluators/ beside factprobe/), which setuptools maps with ``package_dir``;
pyproject.toml alone cannot list the packages of several mapped folders, hence this file.
"""
from setuptools import find_packages, setup

FOLDERS = {
    "factprobe": "factprobe",
    "factprobe.builders": "builders",
    "factprobe.probes": "probes",
    "factprobe.evaluators": "evaluators",
}


def packages() -> list[str]:
    names = []
    for name, folder in FOLDERS.items():
        names.append(name)
        names += [f"{name}.{sub}" for sub in find_packages(folder)
                  if f"{name}.{sub}" not in FOLDERS]
    return sorted(names)


setup(package_dir=FOLDERS, packages=packages())
