"""The Docker image and docker-compose.yml, checked without a Docker engine: the files parse,
every service has a health check, every command they run exists here, the image builds its
Python environment from pyproject.toml, runs as non-root and collects the static files."""

import importlib
import shlex
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command, get_commands
from django.test import Client

from dlq.management.commands.dlq_up import processes
from tests import ROOT

BIN = Path(sys.executable).parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
CONSOLE = ["setup", "web", "drainer", "worker", "beat", "demo"]  # run the console's image
IMAGE_TOOLS = {"rabbitmq": "rabbitmq-diagnostics", "postgres": "pg_isready"}


def argv(command) -> list[str]:
    if isinstance(command, str):
        return shlex.split(command)
    if command[0] == "CMD-SHELL":
        return shlex.split(command[1].replace("$$", "$"))
    return list(command[1:] if command[0] == "CMD" else command)


def check_runs_here(args: list[str]) -> None:
    """The program is installed in this environment and what it is told to run exists."""
    program = args[0]
    assert shutil.which(program, path=f"{BIN}:/usr/bin:/bin"), f"{program} is not installed"
    if program == "python":
        assert args[1] == "manage.py" and (ROOT / "manage.py").exists()
        assert args[2] in get_commands(), f"no manage.py command {args[2]}"
    elif program == "celery":
        assert args[1:3] == ["-A", "console"]
        assert importlib.import_module("console.celery").app.main == "console"
        assert args[3] in {"worker", "beat", "inspect"}
    elif program == "gunicorn":
        assert getattr(importlib.import_module(args[1]), "application", None) is not None
    else:
        pytest.fail(f"unexpected program {program}")


def test_compose_has_every_process_and_the_services_they_need():
    assert {"rabbitmq", "postgres", *CONSOLE} <= set(SERVICES)
    assert (
        SERVICES["rabbitmq"]["image"].startswith("rabbitmq:4")
        and "management" in (SERVICES["rabbitmq"]["image"])
    )
    assert SERVICES["postgres"]["image"].startswith("postgres:")
    assert SERVICES["demo"]["profiles"] == ["demo"]  # `docker compose --profile demo up`


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_service_has_a_health_check_that_can_run(name):
    test = SERVICES[name]["healthcheck"]["test"]
    args = argv(test)
    if name in IMAGE_TOOLS:
        assert args[0] == IMAGE_TOOLS[name]  # shipped by the service's own image
    else:
        check_runs_here(args)


@pytest.mark.parametrize("name", CONSOLE)
def test_every_console_command_exists(name):
    service = SERVICES[name]
    assert service["build"] == "."
    check_runs_here(argv(service["command"]))


def program_of(args: list[str]) -> list[str]:
    """What runs, whatever starts it: `python -m celery ...` and `celery ...` are one, and
    Celery's `--quiet` (no banner under `make run`) changes only what it prints."""
    args = [a for a in args if a != "--quiet"]
    if args[0] in ("python", sys.executable):
        args = args[2:] if args[1] == "-m" else args[1:]
    return args[:4] if args[0] == "celery" else args[:2]


def test_compose_runs_the_same_processes_as_make_run():
    local = processes(8000)
    for name in ("drainer", "worker", "beat"):
        assert program_of(argv(SERVICES[name]["command"])) == program_of(local[name])
    # The web differs on purpose: gunicorn in the image, runserver under `make run`.
    assert argv(SERVICES["web"]["command"])[:2] == ["gunicorn", "console.wsgi"]


def dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def test_the_image_installs_from_pyproject_runs_as_non_root_and_collects_static():
    steps = dockerfile()
    kinds = [kind for kind, _ in steps]
    assert steps[0][0] == "FROM" and steps[0][1].startswith("python:3.11-slim")
    install = steps.index(("RUN", "pip install ."))
    assert ("RUN", "pip install --no-deps -e .") in steps[install:]  # builds the hot path
    copied_before = " ".join(arg for kind, arg in steps[:install] if kind == "COPY")
    assert "pyproject.toml" in copied_before
    user = kinds.index("USER")
    assert steps[user][1] not in {"root", "0"}
    runs_after_user = [arg for kind, arg in steps[user:] if kind == "RUN"]
    assert any("collectstatic --noinput" in arg for arg in runs_after_user)
    assert "useradd" in " ".join(arg for kind, arg in steps[:user] if kind == "RUN")
    cmd = next(arg for kind, arg in reversed(steps) if kind == "CMD")
    check_runs_here(argv(yaml.safe_load(cmd)))
    health = next(arg for kind, arg in steps if kind == "HEALTHCHECK")
    check_runs_here(argv(yaml.safe_load(health.split(" CMD ", 1)[1])))


def test_the_image_copies_only_what_exists_and_ignores_local_state():
    for kind, arg in dockerfile():
        if kind == "COPY" and arg != ". .":
            for source in arg.split()[:-1]:
                assert (ROOT / source).exists(), source
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var"} <= set(ignored)


def test_pyproject_declares_what_the_image_runs():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {dep.split(">")[0].split("[")[0].lower() for dep in deps}
    assert {"gunicorn", "celery", "prometheus-client", "whitenoise", "django"} <= names


def test_static_files_collect_and_are_served(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", interactive=False, verbosity=0)
    assert (tmp_path / "dlq" / "console.css").exists()
    assert Client().get("/static/dlq/console.css").status_code == 200
