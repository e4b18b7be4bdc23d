"""Route preview: which queues a replay would reach now, from the broker's bindings."""

from dlq.actions.replay import Route
from dlq.broker import mgmt

MAX_HOPS = 5  # exchange-to-exchange bindings followed at most this deep


def topic_matches(pattern: str, key: str) -> bool:
    """AMQP topic matching: words split by '.', '*' is one word, '#' is zero or more."""
    return _words_match(tuple(pattern.split(".")), tuple(key.split(".")))


def _words_match(pattern: tuple, words: tuple) -> bool:
    if not pattern:
        return not words
    if pattern[0] == "#":
        return _words_match(pattern[1:], words) or (
            bool(words) and _words_match(pattern, words[1:])
        )
    if not words:
        return False
    return pattern[0] in ("*", words[0]) and _words_match(pattern[1:], words[1:])


def _headers_match(arguments: dict, headers: dict) -> bool:
    wanted = {k: v for k, v in (arguments or {}).items() if not k.startswith("x-")}
    mode = (arguments or {}).get("x-match", "all")
    hits = [k in headers and (headers[k] == v) for k, v in wanted.items()]
    return any(hits) if mode.startswith("any") else all(hits)


def _binding_matches(kind: str, binding: dict, key: str, headers: dict) -> bool:
    if kind == "fanout":
        return True
    if kind == "topic":
        return topic_matches(binding.get("routing_key", ""), key)
    if kind == "headers":
        return _headers_match(binding.get("arguments"), headers)
    return binding.get("routing_key", "") == key  # direct and unknown plugin types


def _walk(vhost, exchange, key, headers, hops, queues: set, seen: set) -> bool:
    """Add the queues `exchange` routes `key` to; False if the exchange does not exist."""
    if exchange in seen or hops > MAX_HOPS:
        return True
    seen.add(exchange)
    info = mgmt.get_exchange(vhost, exchange)
    if info is None:
        return False
    for binding in mgmt.exchange_bindings(vhost, exchange):
        if not _binding_matches(info.get("type", "direct"), binding, key, headers):
            continue
        if binding.get("destination_type") == "queue":
            queues.add(binding["destination"])
        else:
            _walk(vhost, binding["destination"], key, headers, hops + 1, queues, seen)
    alternate = (info.get("arguments") or {}).get("alternate-exchange")
    if not queues and alternate:
        _walk(vhost, alternate, key, headers, hops + 1, queues, seen)
    return True


def preview(vhost: str, route: Route, plain_headers: dict) -> dict:
    """Where a replay on `route` goes now; `queues` is None when the broker cannot tell."""
    result = {"target": route.target, "exchange": route.exchange,
              "routing_key": route.routing_key, "queues": None, "warning": None}  # fmt: skip
    try:
        if route.exchange == "":
            found = mgmt.get_queue(vhost, route.routing_key) is not None
            queues = {route.routing_key} if found else set()
        else:
            queues = set()
            if not _walk(vhost, route.exchange, route.routing_key, plain_headers, 0, queues, set()):
                result["warning"] = f"exchange {route.exchange!r} does not exist: replay would fail"
                result["queues"] = []
                return result
            if (mgmt.get_exchange(vhost, route.exchange) or {}).get("internal"):
                result["warning"] = (
                    f"exchange {route.exchange!r} is internal: clients cannot publish to it"
                )
                result["queues"] = sorted(queues)
                return result
    except mgmt.ManagementError as e:
        result["warning"] = f"route unknown: {e}"
        return result
    result["queues"] = sorted(queues)
    if not queues:
        result["warning"] = "no queue is bound for this route: the replay would be unroutable"
    elif len(queues) > 1:
        result["warning"] = (
            f"{len(queues)} queues would each get a copy; consumers that already handled "
            "this message get it again. Replay to the failed queue to reach only one."
        )
    return result
