"""Route preview: which queues a replay would reach now, from the broker's bindings, and
which of those the console drains itself (a replay there would come straight back)."""

from django.conf import settings

from dlq.actions.errors import DrainedRoute
from dlq.actions.replay import Route
from dlq.broker import amqp, codec, mgmt, names

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


class Lookup:
    """The management API's answers about a vhost's exchanges, each asked once: the messages
    of a step walk the same exchanges, each with its own headers. `saw_headers`: a walk
    went through a headers exchange, so where a message goes depends on its headers."""

    def __init__(self, vhost: str):
        self.vhost, self.saw_headers = vhost, False
        self._exchanges: dict[str, dict | None] = {}
        self._bindings: dict[str, list] = {}

    def exchange(self, name: str) -> dict | None:
        if name not in self._exchanges:
            self._exchanges[name] = mgmt.get_exchange(self.vhost, name)
        return self._exchanges[name]

    def bindings(self, name: str) -> list:
        if name not in self._bindings:
            self._bindings[name] = mgmt.exchange_bindings(self.vhost, name)
        return self._bindings[name]


def _walk(lookup: Lookup, exchange, key, headers, hops, queues: set, seen: set) -> bool:
    """Add the queues `exchange` routes `key` to; False if the exchange does not exist."""
    if exchange in seen or hops > MAX_HOPS:
        return True
    seen.add(exchange)
    info = lookup.exchange(exchange)
    if info is None:
        return False
    kind = info.get("type", "direct")
    lookup.saw_headers |= kind == "headers"
    for binding in lookup.bindings(exchange):
        if not _binding_matches(kind, binding, key, headers):
            continue
        if binding.get("destination_type") == "queue":
            queues.add(binding["destination"])
        else:
            _walk(lookup, binding["destination"], key, headers, hops + 1, queues, seen)
    alternate = (info.get("arguments") or {}).get("alternate-exchange")
    if not queues and alternate:
        _walk(lookup, alternate, key, headers, hops + 1, queues, seen)
    return True


def reach(vhost: str, route: Route, plain_headers: dict, lookup: Lookup | None = None):
    """The queues (a set) a replay on `route` reaches now, None when its exchange does not
    exist (raises mgmt.ManagementError when the broker cannot tell)."""
    if route.exchange == "":
        found = mgmt.get_queue(vhost, route.routing_key) is not None
        return {route.routing_key} if found else set()
    queues: set[str] = set()
    lookup = lookup or Lookup(vhost)
    if not _walk(lookup, route.exchange, route.routing_key, plain_headers, 0, queues, set()):
        return None
    return queues


def reach_each(vhost: str, route: Route, headers) -> tuple[set[str] | None, bool]:
    """The queues the messages taking `route` reach now, and whether one of them reaches
    none. `headers()` gives each message's plain headers, asked for only when the route
    passes a headers exchange (there each message may go elsewhere; without it, the route
    alone decides). None for the queues when the exchange does not exist."""
    lookup = Lookup(vhost)
    queues = reach(vhost, route, {}, lookup)
    if queues is None or not lookup.saw_headers:
        return queues, not queues
    found, stranded, asked = set(), False, False
    for plain in headers():
        each = reach(vhost, route, plain, lookup) or set()
        found, stranded, asked = found | each, stranded or not each, True
    return (found, stranded) if asked else (queues, not queues)


def headers_of(message) -> dict:
    """The message's headers as routing reads them (a headers exchange's bindings)."""
    return {key: codec.plain(value) for key, value in message.headers.items()}


def preview(vhost: str, route: Route, plain_headers: dict) -> dict:
    """Where a replay on `route` goes now; `queues` is None when the broker cannot tell.
    `drained`: the queues of those the console drains (DLQ_QUEUES)."""
    result = _bound(vhost, route, plain_headers)
    reached = set(result["queues"] or ())
    if result["queues"] is None and route.exchange == "":
        reached.add(route.routing_key)  # the default exchange's queue, known without asking
    result["drained"] = drained(vhost, reached)
    return result


def drained(vhost: str, queues) -> list[str]:
    """Those of `queues` (in `vhost`) that DLQ_QUEUES matches: the console drains them."""
    patterns = names.parse_all(settings.DLQ_QUEUES, amqp.vhost_of(settings.DLQ_BROKER_URL))
    return sorted(q for q in queues if names.matches(patterns, vhost, q))


def refuse_drained(reached: set[tuple[str, str]], allow: bool) -> list[str]:
    """Refuse (400 on `target`) a replay whose route reaches queues the console drains,
    (vhost, queue) pairs from preview()'s `drained`, unless `allow`: the console would take
    the message straight back out and store it again with no death, a loop nobody sees.
    Returns those queues as a reader names them."""
    named = [names.qualified(vhost, queue) for vhost, queue in sorted(reached)]
    if named and not allow:
        which = ", ".join(repr(q) for q in named[:5]) + (", ..." if len(named) > 5 else "")
        raise DrainedRoute({"target": [
            f"the route reaches {which}, which the console itself drains (DLQ_QUEUES): the"
            " replay would be taken straight back out and stored again as an arrival with no"
            " death, a loop. Choose another target, fix DLQ_QUEUES, or allow the replay into"
            " a drained queue (allow_drained) to replay there anyway"
        ]})  # fmt: skip
    return named


def _bound(vhost: str, route: Route, plain_headers: dict) -> dict:
    """The preview; `fails` when the replay would not reach a queue (no exchange, an internal
    one, nothing bound), the warning saying why."""
    result = {"target": route.target, "exchange": route.exchange, "routing_key": route.routing_key,
              "queues": None, "warning": None, "fails": False}  # fmt: skip
    try:
        queues = reach(vhost, route, plain_headers)
        if queues is None:
            result["warning"] = f"exchange {route.exchange!r} does not exist: replay would fail"
            result["queues"], result["fails"] = [], True
            return result
        if route.exchange and (mgmt.get_exchange(vhost, route.exchange) or {}).get("internal"):
            result["warning"] = (
                f"exchange {route.exchange!r} is internal: clients cannot publish to it"
            )
            result["queues"], result["fails"] = sorted(queues), True
            return result
    except mgmt.ManagementError as e:
        result["warning"] = f"route unknown: {e}"
        return result
    result["queues"] = sorted(queues)
    if not queues:
        result["warning"] = "no queue is bound for this route: the replay would be unroutable"
        result["fails"] = True
    elif len(queues) > 1:
        result["warning"] = (
            f"{len(queues)} queues would each get a copy; consumers that already handled "
            "this message get it again. Replay to the failed queue to reach only one."
        )
    return result
