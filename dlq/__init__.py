from dlq.compiled import check

check()  # a compiled hot module must not be older than its source (dlq/compiled.py)
