"""The import names of the folders beside curate/: operators/ installs as curate_operators,
lake/ as curate_lake (pyproject.toml says everything else)."""

from setuptools import find_namespace_packages, setup

FOLDERS = {"curate_operators": "operators", "curate_lake": "lake"}
SKIP = ["*__pycache__*"]

packages = find_namespace_packages(include=["curate", "curate.*"], exclude=SKIP)
for name, folder in FOLDERS.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=SKIP)]
setup(packages=packages, package_dir=FOLDERS)
