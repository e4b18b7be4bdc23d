"""A plain wheel runs the console: it carries every subpackage, the migrations, the templates
and the static files. Built from this checkout, installed into a fresh virtualenv, and run
from a folder that holds nothing of the checkout."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import ROOT

pytestmark = pytest.mark.slow


def run(args, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)])
    (built,) = out.glob("dlq_console-*.whl")
    return built


def test_the_wheel_holds_every_package_and_what_the_pages_need(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "dlq").rglob("__init__.py")} | {
        "console"
    }
    for package in packages:
        assert f"{package}/__init__.py" in names, package
    for kept in ("templates", "static"):
        for path in (ROOT / kept).rglob("*.*"):
            assert str(path.relative_to(ROOT)) in names, path
    migrations = {p.name for p in (ROOT / "dlq" / "migrations").glob("0*.py")}
    assert {n.rpartition("/")[2] for n in names if "/migrations/0" in n} == migrations
    assert not [n for n in names if n.endswith(".c")]  # Cython's output stays out


def test_an_installed_wheel_checks_migrates_and_renders(wheel, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", str(wheel)])
    away = tmp_path / "site"  # nothing of the checkout here: only the wheel can answer
    away.mkdir()
    shutil.copy(ROOT / "manage.py", away / "manage.py")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE_URL")},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'wheel.sqlite3'}",
    }
    run([python, "manage.py", "check"], cwd=away, env=env)
    migrated = run([python, "manage.py", "migrate", "--no-input"], cwd=away, env=env)
    assert "Applying dlq.0001_initial... OK" in migrated.stdout
    where = run([python, "-c", "import dlq; print(dlq.__file__)"], cwd=away, env=env)
    assert str(venv) in where.stdout
    rendered = run(
        [python, "manage.py", "shell", "-c",
         "from django.template.loader import get_template;"
         "from django.contrib.staticfiles import finders;"
         "print(get_template('messages/detail.html').origin.name);"
         "print(finders.find('dlq/console.css'))"],
        cwd=away,
        env=env,
    )  # fmt: skip
    assert rendered.stdout.count(str(venv)) == 2, rendered.stdout
