"""Audit rows as a person reads them: "oper started replaying 26 parked messages of
CapturePayment · rejected in demo.payments to the failed queue at 2/s: job 5", and what an
edit or a change did as a field-by-field diff (before → after).

A sentence is Words (dlq/messages/selections.py): actors and every stored name stay `Name`s,
which the page shows through `visible`; the CSV export keeps the raw row (dlq/audit.py).
"""

from datetime import datetime

from django.template.defaultfilters import pluralize
from django.urls import reverse

from dlq.broker import names
from dlq.health.topology import CHECKS
from dlq.messages.groups import name_of
from dlq.messages.selections import Link, Name, Words, describe, of_job, words
from dlq.models.actions import AuditAction
from dlq.web.forms.replay import destination

# What became of a job's messages, by the outcome its items keep.
OUTCOME_WORDS = {"confirmed": "replayed", "unroutable": "returned unroutable",
                 "nacked": "refused by the broker", "error": "failed with an error",
                 "discarded": "discarded", "skipped": "skipped (no longer parked)"}  # fmt: skip
VERBS = {"edit": "edited", "replay": "replayed", "discard": "discarded", "restore": "restored"}
SIGN_INS = {AuditAction.SIGN_IN: " signed in", AuditAction.SIGN_IN_FAILED: ": a sign-in failed",
            AuditAction.SIGN_IN_LOCKED: ": sign-in locked out after failed attempts",
            AuditAction.SIGN_IN_REFUSED: " was refused: no role for their groups"}  # fmt: skip


def sentence(entry, detail) -> Words:
    """The row in words; `detail` is its parsed detail (a dict, or None)."""
    detail = detail if isinstance(detail, dict) else {}
    actor = Name(entry.actor_name)
    action = entry.action
    if action in VERBS:
        return _message_action(actor, entry, detail)
    if action in (AuditAction.JOB_CREATE, AuditAction.JOB_CANCEL, AuditAction.JOB_FINISH,
                  AuditAction.JOB_RESUME):  # fmt: skip
        return _job_action(actor, entry, detail)
    if action in SIGN_INS:
        where, via = detail.get("address"), detail.get("via")
        return words(actor, SIGN_INS[action], *([" from ", Name(where)] if where else []),
                     *([" through ", Name(via)] if via else []))  # fmt: skip
    described = _other(actor, action, detail)
    return described or words(actor, ": ", _label(action).lower())


def _label(action: str) -> str:
    return dict(AuditAction.choices).get(action, action)


def _messages(entry) -> list:
    ids = entry.message_ids
    if len(ids) == 1:
        return [Link(f"message {ids[0]}", reverse("messages:detail", args=[ids[0]]))]
    return [f"{len(ids)} message{pluralize(len(ids))}"]


def _message_action(actor, entry, detail: dict) -> Words:
    parts = [actor, f" {VERBS[entry.action]} ", *_messages(entry)]
    if entry.action == AuditAction.REPLAY and detail.get("target"):
        parts.append(" " + _replayed_to(detail))
        if detail.get("outcome") and detail["outcome"] != "confirmed":
            parts += [": ", Name(OUTCOME_WORDS.get(detail["outcome"], detail["outcome"]))]
    return words(*parts, *_into_drained(detail))


def _into_drained(detail: dict) -> list:
    """A replay the operator let into queues the console drains (dlq/actions/routes.py)."""
    queues = detail.get("allow_drained")
    if not isinstance(queues, list) or not queues:
        return []
    return [
        ", allowed into drained queue",
        "s " if len(queues) > 1 else " ",
        Name(", ".join(map(str, queues))),
    ]


def _replayed_to(detail: dict) -> str:
    target = detail["target"]
    if target in ("original", "failed_queue"):
        return destination(target)
    if isinstance(target, dict):
        return destination(target)
    return destination({"exchange": detail.get("exchange", ""),
                        "routing_key": detail.get("routing_key", "")})  # fmt: skip


def _job_link(entry) -> Link:
    return Link(f"job {entry.job_id}", reverse("jobs:detail", args=[entry.job_id]))


def _job_action(actor, entry, detail: dict) -> Words:
    job = _job_link(entry) if entry.job_id else "a job"
    if entry.action == AuditAction.JOB_CANCEL:
        return words(actor, " cancelled ", job)
    if entry.action == AuditAction.JOB_RESUME:
        paused = detail.get("paused")
        return words(actor, " resumed ", job, *([" (", Name(paused), ")"] if paused else []))
    if entry.action == AuditAction.JOB_FINISH:
        return _finished(job, detail)
    replaying = detail.get("action") == "replay"
    chosen = of_job(detail.get("filter"), detail.get("total") or 0)
    to = " " + destination(detail["target"]) if replaying and detail.get("target") else ""
    rate = f" at {detail['rate_per_s']}/s" if detail.get("rate_per_s") else ""
    verb = " started replaying " if replaying else " started discarding "
    retry = detail.get("retry_of")
    again = [", the failed of job ", Name(str(retry))] if isinstance(retry, int) else []
    return words(actor, verb) + chosen + words(f"{to}{rate}", *_into_drained(detail), *again,
                                               ": ", job)  # fmt: skip


def _finished(job, detail: dict) -> Words:
    status = detail.get("status", "")
    if status == "done" and detail.get("failed"):
        status = "done with failures"
    outcomes = sorted((detail.get("outcomes") or {}).items(), key=lambda pair: -pair[1])
    said = ", ".join(f"{n:,} {OUTCOME_WORDS.get(name, name)}" for name, n in outcomes)
    total = detail.get("total") or 0
    return words(job, f" ({detail.get('action', 'bulk')}) finished, {status}: ",
                 said or "nothing settled", f" of {total:,} message{pluralize(total)}")  # fmt: skip


def _other(actor, action: str, d: dict) -> Words | None:
    """Tokens, mutes, channels, overrides, users, the purge: None when the detail lacks
    what the sentence needs (a row older than its shape)."""
    try:
        return _OTHER[action](actor, d) if action in _OTHER else None
    except (KeyError, TypeError, ValueError):
        return None


def _mute(actor, d: dict, verb: str) -> Words:
    what = [" of ", Name(name_of(d["group"]) or d["group"])] if d.get("group") else []
    where = [" in ", Name(d["queue"])] if d.get("queue") else []
    return words(actor, verb, *what, *where, " until ", datetime.fromisoformat(d["until"]))


def _warning(actor, d: dict, verb: str) -> Words:
    title = CHECKS[d["check"]][0] if d["check"] in CHECKS else d["check"]
    return words(actor, verb, Name(title.lower()), " on queue ", Name(d["queue"]),
                 " in vhost ", Name(d["vhost"]))  # fmt: skip


def _group_update(actor, d: dict) -> Words:
    """ "oper took failure group ChargeCard · …" or "oper changed the hold and the note of …"."""
    group = d["group"]
    named = Link(name_of(group) or group, reverse("groups:detail", args=[group]))
    changed = [c["field"] for c in changes(d["before"], d["after"])]
    if changed == ["owner"] and d["after"]["owner"]:
        return words(actor, " made ", Name(d["after"]["owner"]), " the owner of failure group ",
                     named)  # fmt: skip
    said = [GROUP_FIELDS.get(f, f) for f in changed] or ["nothing"]
    fields = " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 1 else said)
    return words(actor, f" changed {fields} of failure group ", named)


GROUP_FIELDS = {"owner": "the owner", "note": "the note", "ticket_url": "the ticket",
                "hold_until": "the hold"}  # fmt: skip


def _exported(actor, d: dict) -> Words:
    said = words(actor, " exported ") + describe(d["filter"], d["count"])
    return said if d["complete"] else said + words(" (the download stopped short)")


def _imported(actor, d: dict) -> Words:
    count = d["count"]
    into = []
    if d.get("queue"):
        into = [" into ", Name(names.qualified(d.get("vhost") or "/", d["queue"]))]
    elif d.get("vhost"):
        into = [" into vhost ", Name(d["vhost"])]
    return words(actor, f" imported {count:,} message{pluralize(count)}", *into, " from ",
                 Name(d["source"]))  # fmt: skip


def _policy(actor, d: dict) -> Words:
    """ "admin added redrive policy flaky-payments", "... changed the delay and the cap of ..."."""
    policy = d["after"] or d["before"]
    if d["before"] is None:
        return words(actor, " added redrive policy ", Name(policy["name"]))
    if d["after"] is None:
        return words(actor, " deleted redrive policy ", Name(policy["name"]))
    changed = [POLICY_FIELDS.get(c["field"], c["field"]) for c in changes(d["before"], d["after"])]
    if d["before"]["state"] == "tripped" and d["after"]["state"] == "active":
        return words(actor, " re-armed tripped redrive policy ", Name(policy["name"]))
    said = ", ".join(changed) or "nothing"
    return words(actor, f" changed {said} of redrive policy ", Name(policy["name"]))


POLICY_FIELDS = {"enabled": "enabled", "match": "the match", "delay_seconds": "the delay",
                 "max_attempts": "the cap", "rate_per_s": "the rate",
                 "trip_returns": "the trip limit",
                 "trip_window_seconds": "the trip window"}  # fmt: skip


CHATS = {"slack": "Slack", "telegram": "Telegram"}
PRESSED = {"ack": "Acknowledge", "mute": "Mute 1 h", "canary": "Canary"}


def _chat_user(d: dict) -> Words:
    """ "Telegram user 4242 (@oper)": the chat and the chat user's id, stored names kept."""
    named = [" (", Name(d["chat_name"]), ")"] if d.get("chat_name") else []
    return words(f"{CHATS.get(d['via'], d['via'])} user ", Name(d["chat_user"]), *named)


def _pressed(actor, d: dict) -> Words:
    """ "oper pressed Acknowledge on failure group X in Telegram (as Telegram user 4242)"."""
    group = d["group"]
    named = Link(name_of(group) or group, reverse("groups:detail", args=[group]))
    via = CHATS.get(d["via"], d["via"])
    return words(actor, f" pressed {PRESSED.get(d['action'], d['action'])} on failure group ",
                 named, f" in {via} (as {via} user ", Name(d["chat_user"]), ")")  # fmt: skip


_OTHER = {
    AuditAction.ALERT_PRESS: _pressed,
    AuditAction.CHAT_LINK: lambda a, d: words(a, " linked ") + _chat_user(d) + words(
        " to console user ", Name(d["user"])),
    AuditAction.CHAT_UNLINK: lambda a, d: words(a, " unlinked ") + _chat_user(d) + words(
        " from console user ", Name(d["user"])),
    AuditAction.POLICY_CREATE: _policy,
    AuditAction.POLICY_UPDATE: _policy,
    AuditAction.POLICY_DELETE: _policy,
    AuditAction.POLICY_TRIP: lambda a, d: words(
        "redrive policy ", Name(d["name"]), f" tripped: {d['returns']:,} of its redriven"
        f" messages came back within {d['window_seconds']:,} s; it stopped"),
    AuditAction.EXPORT: _exported,
    AuditAction.IMPORT: _imported,
    AuditAction.TOKEN_CREATE: lambda a, d: words(
        a, " created API token ", Name(d["prefix"]), "… for ", Name(d["user"])),
    AuditAction.TOKEN_REVOKE: lambda a, d: words(
        a, " revoked API token ", Name(d["prefix"]), "… of ", Name(d["user"])),
    AuditAction.MUTE_ADD: lambda a, d: _mute(a, d, " muted alerts"),
    AuditAction.MUTE_REMOVE: lambda a, d: _mute(a, d, " removed the alert mute"),
    AuditAction.CHANNEL_CHANGE: lambda a, d: words(
        a, f" made a change ({d['change']}) to alert channel ", Name(d["channel"]),
        f" ({d['kind']})"),
    AuditAction.REPLAY_TARGET_CHANGE: lambda a, d: words(
        a, " deleted" if d["after"] is None else " added" if d["before"] is None else " changed",
        " the replay override for ", Name((d["after"] or d["before"])["queue_pattern"])),
    AuditAction.USER_CREATE: lambda a, d: words(
        a, " created user ", Name(d["user"]), f" ({d['role']})"),
    AuditAction.USER_DEACTIVATE: lambda a, d: words(a, " deactivated user ", Name(d["user"])),
    AuditAction.USER_ACTIVATE: lambda a, d: words(a, " reactivated user ", Name(d["user"])),
    AuditAction.TOPOLOGY_ACK: lambda a, d: _warning(a, d, " acknowledged the warning "),
    AuditAction.TOPOLOGY_UNACK: lambda a, d: _warning(
        a, d, " withdrew the acknowledgement of the warning "),
    AuditAction.GROUP_UPDATE: _group_update,
    AuditAction.AUDIT_PURGE: lambda a, d: words(
        a, f" purged {d['purged']:,} audit rows older than ", datetime.fromisoformat(d["before"])),
}  # fmt: skip


def changes(before, after) -> list[dict]:
    """A change's fields that differ, before → after (a missing side is None)."""
    before, after = before or {}, after or {}
    names = [*before, *(k for k in after if k not in before)]
    return [{"field": name, "before": before.get(name), "after": after.get(name)}
            for name in names if before.get(name) != after.get(name)]  # fmt: skip
