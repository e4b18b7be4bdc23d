FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY console console
COPY dlq dlq
RUN pip install --no-cache-dir .
COPY . .
RUN useradd --create-home --uid 1000 dlq && mkdir -p var && chown -R dlq var
USER dlq
RUN DATABASE_URL=sqlite:////tmp/collect.sqlite3 python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "console.wsgi", "-b", "0.0.0.0:8000"]
