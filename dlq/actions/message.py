"""Everything an operator does to one message: replay, edit, discard, restore.

Each is a plain function: it checks the status under a row lock, changes the message in one
transaction and writes its audit row there. The API, the web pages and the Celery tasks all
call these; none of them changes a message any other way.
"""

import base64
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction

from dlq import audit
from dlq.actions import changes, replay, routes
from dlq.actions.errors import ActionError, Conflict, NotFound
from dlq.broker import amqp
from dlq.broker.publisher import ConfirmPublisher
from dlq.messages import search
from dlq.messages.ingest import search_text
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, MessageVersion, Outcome, Replay
from dlq.text import clean

# Why an edit that leaves body, headers and properties as they are is refused (the API's
# 400 and the page's form error): no version and no audit row for nothing.
NO_CHANGE = "no change: the edit leaves the body, headers and properties as they are"


@dataclass
class ReplayResult:
    outcome: str
    detail: str
    replay_id: str
    message_id: int


def _require_reason(reason) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ActionError({"reason": ["a reason is required"]})
    return reason.strip()


def _locked(message_id: int) -> Message:
    try:
        return Message.objects.select_for_update().get(pk=message_id)
    except Message.DoesNotExist:
        raise NotFound(f"message {message_id} does not exist") from None


def _expect(message: Message, status: str, action: str) -> None:
    if message.status != status:
        raise Conflict(
            f"message {message.pk} is {message.status}; only {status} messages can be {action}"
        )


# --- discard and restore ------------------------------------------------------------------


def _move(message_id, actor, reason, source, target, action, verb, request_id) -> Message:
    reason = _require_reason(reason)
    with transaction.atomic():
        message = _locked(message_id)
        _expect(message, source, verb)
        message.status = target
        message.save(update_fields=["status"])
        audit.record(actor, action, reason, [message.pk], request_id=request_id)
    return message


def discard(message_id: int, actor, reason: str, request_id: str = "") -> Message:
    return _move(message_id, actor, reason, Status.PARKED, Status.DISCARDED,
                 AuditAction.DISCARD, "discarded", request_id)  # fmt: skip


def restore(message_id: int, actor, reason: str, request_id: str = "") -> Message:
    return _move(message_id, actor, reason, Status.DISCARDED, Status.PARKED,
                 AuditAction.RESTORE, "restored", request_id)  # fmt: skip


# --- replay -------------------------------------------------------------------------------


def claim_for_replay(message_id: int, target, actor, publisher=None) -> tuple[Replay, object]:
    """Check, build and mark `replaying` in one transaction; the publish happens after it."""
    with transaction.atomic():
        message = _locked(message_id)
        _expect(message, Status.PARKED, "replayed")
        if publisher is not None and publisher.vhost != message.vhost:
            raise Conflict(f"message {message.pk} is in vhost {message.vhost!r}, "
                           f"not {publisher.vhost!r}: it is only replayed in its own")  # fmt: skip
        try:
            route = replay.resolve(message, target)
        except replay.ReplayError as e:
            raise ActionError({"target": [str(e)]}) from None
        try:
            outgoing = replay.build(
                message,
                route,
                uuid.uuid4().hex,
                frame_max=publisher.frame_max if publisher else 131072,
                max_body=replay.max_message_bytes(publisher.server_version if publisher else ""),
            )
        except replay.ReplayError as e:
            # The stored message itself is what the broker would refuse: edit it first.
            raise ActionError({"detail": [f"cannot replay message {message.pk}: {e}"]}) from None
        message.status = Status.REPLAYING
        message.save(update_fields=["status"])
        attempt = Replay.objects.create(
            message=message,
            replay_id=outgoing.key,
            exchange=route.exchange,
            routing_key=route.routing_key,
            target=route.target,
            actor_name=audit.actor_fields(actor)["actor_name"],
            started_at=datetime.now(UTC),
        )
    return attempt, outgoing


def settle_replay(attempt: Replay, outcome: str, detail: str, actor, reason: str,
                  request_id: str = "", job_id=None, drained: list[str] = ()) -> None:  # fmt: skip
    """Record the broker's answer: `replayed` only on a confirm with no return. `drained`:
    the queues the console drains that the operator chose to replay into (audited)."""
    with transaction.atomic():
        message = _locked(attempt.message_id)
        confirmed = outcome == Outcome.CONFIRMED
        message.status = Status.REPLAYED if confirmed else Status.PARKED
        message.replay_count += 1 if confirmed else 0
        message.save(update_fields=["status", "replay_count"])
        attempt.outcome, attempt.detail = outcome, detail
        attempt.settled_at = datetime.now(UTC)
        attempt.save(update_fields=["outcome", "detail", "settled_at"])
        if job_id is None:
            detail = _replay_detail(attempt)
            if drained:
                detail["allow_drained"] = list(drained)
            audit.record(actor, AuditAction.REPLAY, reason, [message.pk], request_id=request_id,
                         detail=detail)  # fmt: skip


def _replay_detail(attempt: Replay) -> dict:
    return {
        "replay_id": attempt.replay_id,
        "target": attempt.target,
        "exchange": attempt.exchange,
        "routing_key": attempt.routing_key,
        "outcome": attempt.outcome,
        "detail": attempt.detail,
    }


def replay_one(message_id: int, target, actor, reason: str, request_id: str = "",
               allow_drained: bool = False) -> ReplayResult:  # fmt: skip
    """Replay one message with a publisher confirm and report the broker's answer. A route
    into a queue the console drains is refused unless `allow_drained` (routes.py)."""
    reason = _require_reason(reason)
    message = Message.objects.defer("body", "search_text").filter(pk=message_id).first()
    if message is None:
        raise NotFound(f"message {message_id} does not exist")
    vhost = message.vhost
    drained = drained_on_route(message, target, allow_drained)
    publisher = None
    try:
        # In the vhost the message was drained from, never the URL's (contract: a message
        # is never published into another vhost). claim_for_replay checks it again.
        publisher = ConfirmPublisher(settings.DLQ_BROKER_URL, "dlq-replay", vhost=vhost)
    except (ConnectionError, *amqp.AllErrors) as e:
        connect_error = str(e)
    else:
        connect_error = None
    try:
        attempt, outgoing = claim_for_replay(message_id, target, actor, publisher)
        if publisher is None:
            outcome, detail = Outcome.ERROR, connect_error
        else:
            try:
                outcome, detail = publisher.publish([outgoing], timeout=30)[outgoing.key]
            except amqp.AllErrors as e:
                # Whatever pika raises, the message must not stay `replaying`.
                outcome, detail = Outcome.ERROR, f"publishing failed: {e!r}"
        settle_replay(attempt, outcome, detail, actor, reason, request_id, drained=drained)
    finally:
        if publisher is not None:
            publisher.close()
    return ReplayResult(outcome, detail, attempt.replay_id, message_id)


def drained_on_route(message: Message, target, allow: bool) -> list[str]:
    """The drained queues the replay would reach (refused unless `allow`); a target that
    does not resolve, and a message that is not parked, are refused by the claim."""
    if message.status != Status.PARKED:
        return []
    try:
        route = replay.resolve(message, target)
    except replay.ReplayError:
        return []
    headers = routes.headers_of(message)
    found = routes.preview(message.vhost, route, headers)
    return routes.refuse_drained({(message.vhost, q) for q in found["drained"]}, allow)


STALE_REPLAY_SECONDS = 300  # far beyond a single replay's connect and confirm timeouts


def release_stale_replays(older_than: float = STALE_REPLAY_SECONDS) -> int:
    """Single replays whose process died between publish and settle left their message
    `replaying`; put them back to `parked` with an `error` outcome (the broker may or may
    not have routed them). Bulk jobs resume their own (dlq/jobs/running.py). Returns the
    count."""
    cutoff = datetime.now(UTC) - timedelta(seconds=older_than)
    stale = Replay.objects.filter(job__isnull=True, outcome="", started_at__lt=cutoff)
    released = 0
    for attempt in stale.only("id", "message_id"):
        with transaction.atomic():
            message = Message.objects.select_for_update().filter(pk=attempt.message_id).first()
            fresh = Replay.objects.select_for_update().get(pk=attempt.pk)
            if fresh.outcome:
                continue
            fresh.outcome, fresh.settled_at = Outcome.ERROR, datetime.now(UTC)
            fresh.detail = "interrupted before the broker answered: it may have been delivered"
            fresh.save(update_fields=["outcome", "detail", "settled_at"])
            if message is not None and message.status == Status.REPLAYING:
                message.status = Status.PARKED
                message.save(update_fields=["status"])
                released += 1
    return released


# --- edit ---------------------------------------------------------------------------------


def edit(message_id: int, actor, reason: str, *, body_text=None, body_base64=None,
         headers=None, properties=None, request_id: str = "",
         stored_body: bool = False) -> Message:  # fmt: skip
    """Change body, headers or properties of a parked message; the old version is kept.
    `stored_body`: the body is one the console stored before (a version being restored),
    taken as it is, like the body a message arrived with."""
    reason = _require_reason(reason)
    body = changes.new_body(body_text, body_base64)
    if headers is not None:
        changes.validated_headers(headers)
    with transaction.atomic():
        message = _locked(message_id)
        _expect(message, Status.PARKED, "edited")
        if properties is not None:
            changes.validated_properties(properties, message.properties)
        old_body, old_props, old_headers = bytes(message.body), message.properties, message.headers
        new_body = old_body if body is None else body
        new_props = old_props if properties is None else properties
        new_headers = old_headers if headers is None else headers
        if new_body != old_body and not stored_body:  # as it came: never refused for its content
            changes.check_body(new_body, new_props)
        diff = {
            "body": changes.body_diff(old_body, new_body, old_props.get("content_encoding") or "")
            if new_body != old_body
            else None,
            "properties": changes.map_diff(old_props, new_props),
            "headers": changes.map_diff(old_headers, new_headers),
        }
        diff = {k: v for k, v in diff.items() if v}
        if not diff:
            raise ActionError({"detail": [NO_CHANGE]})
        _keep_version(message, actor, reason)
        _apply(message, new_body, new_props, new_headers)
        _check_replayable(message)
        message.save()
        search.reindex(message)
        audit.record(actor, AuditAction.EDIT, reason, [message.pk], diff=diff,
                     request_id=request_id)  # fmt: skip
    return message


def restore_version(message_id: int, number: int, actor, reason: str,
                    request_id: str = "") -> Message:  # fmt: skip
    """Make an earlier version the current one: an edit like any other (a reason, audited,
    only while parked; the version it replaces is kept in turn)."""
    version = MessageVersion.objects.filter(message_id=message_id, number=number).first()
    if version is None:
        raise NotFound(f"message {message_id} has no version {number}")
    return edit(message_id, actor, reason, request_id=request_id, stored_body=True,
                body_base64=base64.b64encode(bytes(version.body)).decode(),
                properties=json.loads(version.properties_json),
                headers=json.loads(version.headers_json))  # fmt: skip


def version_diff(version: MessageVersion, message: Message) -> dict:
    """What restoring `version` would change, in an edit's audit diff shape."""
    old_body, new_body = bytes(message.body), bytes(version.body)
    encoding = message.properties.get("content_encoding") or ""
    diff = {
        "body": changes.body_diff(old_body, new_body, encoding) if new_body != old_body else None,
        "properties": changes.map_diff(message.properties, json.loads(version.properties_json)),
        "headers": changes.map_diff(message.headers, json.loads(version.headers_json)),
    }
    return {k: v for k, v in diff.items() if v}


def _keep_version(message: Message, actor, reason: str) -> None:
    MessageVersion.objects.create(
        message=message,
        number=message.versions.count() + 1,
        body=bytes(message.body),
        properties_json=message.properties_json,
        headers_json=message.headers_json,
        replaced_at=datetime.now(UTC),
        replaced_by=audit.actor_fields(actor)["actor_name"],
        reason=reason,
    )


def _apply(message: Message, body: bytes, props: dict, headers: dict) -> None:
    message.body, message.size = body, len(body)
    # Equal values keep their stored JSON (a double 2.0 sent back as 2, the drainer's compact
    # form): what the operator did not change is not rewritten.
    if props != message.properties:
        message.properties_json = json.dumps(props)
    if headers != message.headers:
        message.headers_json = json.dumps(headers)
    for name in ("message_id", "correlation_id", "content_type", "content_encoding"):
        setattr(message, name, clean(props.get(name)))
    message.search_text = search_text(body, props.get("content_encoding") or "", headers)


def _check_replayable(message: Message) -> None:
    """An edit the broker would refuse on replay (a header frame above the default frame_max,
    with the console's own headers added) fails now, with the field to fix."""
    try:
        replay.build(message, replay.Route("check", "", ""), "0" * 32)
    except replay.ReplayError as e:
        raise ActionError({"headers": [str(e)]}) from None
