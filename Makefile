# The two fresh-machine entry points are `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgres://root@127.0.0.1:5432/dlq

.PHONY: run test setup setup-test services lint check bench docs-screenshots clean

# Again when a compiled module's source changes: the install builds it (setup.py).
# `make run` needs the runtime dependencies only; the test tools come with `make test`.
$(VENV)/.installed: pyproject.toml setup.py dlq/broker/_wire.pyx \
		dlq/messages/deaths.py dlq/messages/ingest.py dlq/text.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed

setup-test: $(VENV)/.installed-test

run: setup
	$(PY) manage.py dlq_up

services:
	bash .ci/services

lint: setup-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

check: setup
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) manage.py check
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) manage.py makemigrations --check --dry-run

test: setup-test services lint check
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest $(PYTEST_ARGS)

bench: setup services
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) bench/drain.py

# The user guide's pictures (docs/tour.md), taken by the browser tests.
SCREENSHOTS := ops-overview messages-list message-detail message-replayed ops-groups \
	ops-bulk-review ops-job-done ops-audit alerts-channels-admin topology-health
docs-screenshots: setup-test services
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest -q tests/web/test_browser_ops.py \
		tests/web/test_browser_messages.py tests/web/test_browser_alerts.py \
		tests/health/test_topology_browser.py
	for name in $(SCREENSHOTS); do cp tests/artifacts/$$name.png docs/img/; done

clean:
	rm -rf $(VENV) var
