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

# The user guide's pictures (docs/tour.md), taken by the browser tests: by their own name, and
# (RENAMED, artifact:picture) where the tour shows one width of a picture taken at several.
SCREENSHOTS := ops-overview messages-list message-detail message-replayed ops-groups \
	ops-bulk-review ops-job-done ops-audit alerts-channels-admin topology-health \
	edges-overview-nobody-paged edges-alert-channels edges-users edges-token-made \
	edges-404-message job-paused alerts-sent-acknowledged account-telegram-deep-link \
	account-slack-confirm
RENAMED := groups-worklist-mine-1280-window:groups-worklist groups-form-1280-window:group-page \
	safe-replay-review-1280:safe-replay-review safe-replay-job-1280-window:safe-replay-job \
	policies-preview-1280:policies overview-drained-1280:overview-drained \
	message-edit-replay-1280:message-edit-replay
docs-screenshots: setup-test services
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest -q tests/web/test_browser_ops.py \
		tests/web/test_browser_messages.py tests/web/test_browser_alerts.py \
		tests/health/test_topology_browser.py tests/web/test_browser_edges.py \
		tests/web/test_browser_groups.py tests/web/test_browser_safe_replay.py \
		tests/web/test_browser_stuck_job.py tests/web/test_browser_policies.py \
		tests/health/test_drained_browser.py tests/web/test_browser_edit_replay.py \
		tests/web/test_browser_account.py
	for name in $(SCREENSHOTS); do cp tests/artifacts/$$name.png docs/img/; done
	for pair in $(RENAMED); do \
		cp tests/artifacts/$${pair%%:*}.png docs/img/$${pair##*:}.png; done

clean:
	rm -rf $(VENV) var
