"""Which folders become which packages (the rest of the metadata is in pyproject.toml).

Discovered, never listed by hand, so a new sub-package cannot be left out of a wheel: every package under
`transpiler/`, plus three top-level folders of the user's layout mapped into the one `transpiler` namespace
(a bare top-level `runtime` would collide with other distributions):

    runtime/    -> transpiler.runtime     (and any sub-packages it grows)
    templates/  -> transpiler.templates   (Jinja templates and device headers, as package data)
    examples/   -> transpiler.examples    (the demo's kernels: `python -m transpiler demo` from a wheel)
"""
from setuptools import find_namespace_packages, setup

MAPPED_FOLDERS = {"runtime": "transpiler.runtime", "templates": "transpiler.templates",
                  "examples": "transpiler.examples"}
NOT_PACKAGES = ["__pycache__", "*.__pycache__"]
# Everything in these folders that is not Python ships as data; the globs are by kind, not by file name.
PACKAGE_DATA = {"transpiler.templates": ["*.j2", "*.cuh", "*.h", "*.cu", "*.c"]}


def discover_packages() -> tuple[list, dict]:
    """(package names, package_dir) for every package of the source tree."""
    # Namespace discovery: a folder of modules counts even without an __init__.py.
    packages = find_namespace_packages(include=["transpiler", "transpiler.*"], exclude=NOT_PACKAGES)
    package_dir = {}
    for folder, name in MAPPED_FOLDERS.items():
        subpackages = find_namespace_packages(where=folder, exclude=NOT_PACKAGES)
        packages += [name] + [f"{name}.{sub}" for sub in subpackages]
        package_dir[name] = folder
    return packages, package_dir


if __name__ == "__main__":
    packages, package_dir = discover_packages()
    setup(packages=packages, package_dir=package_dir, package_data=PACKAGE_DATA, include_package_data=False)
