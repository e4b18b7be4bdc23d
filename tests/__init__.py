"""The console's tests, grouped like `dlq/`; the helpers beside this file are shared."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout the tests run in
