"""Builds the drainer's hot path as C extensions with Cython, where a C compiler is at hand.

pyproject.toml holds the project; this file adds only the extensions. Each one is optional:
without a compiler the install goes on and the same code runs as Python (slower, same
results: tests/test_compiled.py). Editable installs (`make setup`) build them in place and
write dlq/_compiled.json, the SHA-256 of each source, so that a source changed since the
build is noticed at import (dlq/compiled.py) instead of silently running the old code.
"""

import hashlib
import json
import runpy
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# dlq/compiled.py names them; read, not imported (the package would run its start-up check).
SOURCES = {
    name: f"dlq/{source}"
    for name, source in runpy.run_path(str(ROOT / "dlq" / "compiled.py"))["SOURCES"].items()
}


class BuildExt(build_ext):
    """Records only what this build compiled; an in-place build that failed (the extensions
    are optional) removes the old one, so its source runs rather than an out-of-date build."""

    compiled = None  # the names this build compiled, once it has run

    def run(self):
        self.compiled = set()
        super().run()
        if not self.inplace:
            return
        built = {}
        for name, source in SOURCES.items():
            path = Path(self.get_ext_fullpath(name))
            if name in self.compiled:
                built[name] = hashlib.sha256((ROOT / source).read_bytes()).hexdigest()
            elif path.exists():
                path.unlink()
        (ROOT / "dlq" / "_compiled.json").write_text(json.dumps(built, indent=1) + "\n")

    def get_output_mapping(self):
        # What editable installs copy beside the sources: not what failed to build.
        mapping = super().get_output_mapping()
        if getattr(self, "compiled", None) is None:  # asked before the build
            return mapping
        return {built: there for built, there in mapping.items() if Path(built).exists()}

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # no C compiler, or it failed: the source runs as Python
            self.warn(f"{ext.name} is not compiled and runs as Python: {e}")
            return
        self.compiled.add(ext.name)


extensions = cythonize(
    [Extension(name, [source]) for name, source in SOURCES.items()],
    # Annotations stay hints, as in Python: no type checks that the source does not make.
    compiler_directives={"language_level": 3, "annotation_typing": False},
    force=True,  # by content, not by file times: a copied source may look older
    quiet=True,
)
for extension in extensions:
    extension.optional = True  # set here: cythonize() does not carry it over

setup(ext_modules=extensions, cmdclass={"build_ext": BuildExt})
