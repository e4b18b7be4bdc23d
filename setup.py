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
    def run(self):
        super().run()
        built = {}
        for name, source in SOURCES.items():
            path = Path(self.get_ext_fullpath(name))
            if path.exists():
                built[name] = hashlib.sha256((ROOT / source).read_bytes()).hexdigest()
        manifest = ROOT / "dlq" / "_compiled.json"
        if self.inplace:
            manifest.write_text(json.dumps(built, indent=1, sort_keys=True) + "\n")


setup(
    ext_modules=cythonize(
        [Extension(name, [source], optional=True) for name, source in SOURCES.items()],
        # Annotations stay hints, as in Python: no type checks that the source does not make.
        compiler_directives={"language_level": 3, "annotation_typing": False},
        quiet=True,
    ),
    cmdclass={"build_ext": BuildExt},
)
