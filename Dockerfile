# DLQ Console: one image for the web, the drainer, the Celery worker and beat
# (docker-compose.yml picks the process with `command`).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

# A C compiler builds the drainer's hot path (setup.py: Cython); without one, the same code
# runs as Python, slower.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

# The Python environment comes from pyproject.toml alone, in a layer of its own, so a code
# change does not reinstall the dependencies. (The packages are needed to build the
# project's wheel; the code that runs is the copy below.)
COPY pyproject.toml setup.py README.md ./
COPY console console
COPY dlq dlq
RUN pip install .

COPY . .
# The copy that runs gets its compiled modules beside their sources, as `make setup` does.
RUN pip install --no-deps -e .

# Never root: a fixed uid that owns only var/ (the beat schedule, static files).
RUN useradd --create-home --uid 10001 dlq && mkdir -p var && chown -R dlq:dlq var
USER dlq

# Static files are collected into the image and served by WhiteNoise from gunicorn.
RUN DATABASE_URL=sqlite:////tmp/collectstatic.sqlite3 python manage.py collectstatic --noinput

EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --retries=3 CMD ["python", "manage.py", "dlq_health", "web"]
CMD ["gunicorn", "console.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
