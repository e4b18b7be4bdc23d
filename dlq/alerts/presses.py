"""A button pressed in a Slack or Telegram alert, done as the linked console user.

`press` takes what the chat says (who pressed, which action, the button's opaque
reference) and answers an `Outcome` in words for the presser: done, or why not. Nothing is
done for an unknown reference (another console's alert, a forged or removed one), an
unlinked chat user (the caller explains linking), an inactive user or one whose role may
not (a viewer), or a group nothing of is stored. Each press that does something is audited
twice over: the action's own row (owner set, mute, job) as the console user, and an
`alert_press` row with `via`, the chat user's id and the same request id.

The chat adapters (dlq/alerts/slack/, dlq/alerts/telegram/) verify where a press came from
before calling this; the caller starts a Canary's job after the commit."""

import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from dlq import audit
from dlq.accounts.roles import OPERATOR, rank, role_of
from dlq.actions.errors import ActionError
from dlq.alerts import links, mutes
from dlq.alerts.formats import cap
from dlq.groups import triage, worklist
from dlq.jobs import control
from dlq.models import AlertAttempt, AlertButton, AuditAction, Job

ACTIONS = {"ack": "Acknowledge", "mute": "Mute 1 h", "canary": "Canary"}
DONE = {"ack": "acknowledged", "mute": "muted for 1 h", "canary": "started a canary replay of"}
MUTE_FOR = timedelta(hours=1)
CANARY = 10


@dataclass
class Outcome:
    done: bool
    text: str  # for the presser, in the console's words (untrusted values capped)
    user: object = None  # the console user who acted
    group: str = ""
    attempt: AlertAttempt | None = None
    job: Job | None = None  # a Canary's job, for the caller to start after the commit
    unlinked: bool = False  # the caller explains how to link


def new_ref() -> str:
    return secrets.token_urlsafe(12)  # 16 characters: `dlq:canary:` + it fits in 64 bytes


def buttons_for(attempt: AlertAttempt, groups: list[str]) -> dict[str, str]:
    """A reference per group for this alert's buttons (made once per attempt)."""
    made = {b.group: b.ref for b in AlertButton.objects.filter(attempt=attempt)}
    new = [AlertButton(ref=new_ref(), attempt=attempt, group=g, position=i)
           for i, g in enumerate(groups, start=1) if g not in made]  # fmt: skip
    AlertButton.objects.bulk_create(new)
    return made | {b.group: b.ref for b in new}


def press(via: str, chat_user: str, action: str, ref: str) -> Outcome:
    if action not in ACTIONS:
        return Outcome(False, "This button is not one the console knows.")
    button = None
    if isinstance(ref, str) and len(ref) <= 24:
        button = AlertButton.objects.filter(ref=ref).select_related("attempt").first()
    if button is None:
        return Outcome(False, "This alert is not one this console sent (or it was removed).")
    found = Outcome(False, "", group=button.group, attempt=button.attempt)
    user = links.linked_user(via, chat_user)
    if user is None:
        found.text, found.unlinked = "Your chat account is not linked to a console user.", True
        return found
    found.user = user
    role = role_of(user)
    if not user.is_active or role is None:
        why = "is not active" if not user.is_active else "has no role in the console"
        found.text = f"The console user {cap(user.get_username(), 40)} {why}."
        return found
    if rank(role) < rank(OPERATOR):
        name = cap(user.get_username(), 40)
        found.text = f"{name} is a {role}: a viewer may not {ACTIONS[action]}."
        return found
    if worklist.one(button.group) is None:
        found.text = "Nothing of this failure group is stored any more."
        return found
    return _do(found, via, chat_user, action)


def _do(found: Outcome, via: str, chat_user: str, action: str) -> Outcome:
    request_id = f"{via}-{uuid.uuid4().hex[:16]}"
    reason = f"{ACTIONS[action]} pressed in {via.title()}"
    try:
        with transaction.atomic():
            found.job = act(found.user, found.group, action, reason, request_id)
            audit.record(found.user, AuditAction.ALERT_PRESS, reason, request_id=request_id,
                         job_id=found.job.pk if found.job else None,
                         detail={"via": via, "chat_user": chat_user, "action": action,
                                 "group": found.group, "alert": found.attempt.pk})  # fmt: skip
    except (ActionError, ValidationError) as e:
        found.text = f"Not done: {cap(said(e), 200)}"
        return found
    found.done = True
    found.text = f"{cap(found.user.get_username(), 40)} {DONE[action]} this failure group."
    return found


def act(user, group: str, action: str, reason: str, request_id: str) -> Job | None:
    """Do one of ACTIONS on `group` as `user` (the caller checked the role): Acknowledge
    makes them its owner, Mute 1 h mutes it, Canary makes a replay job of it to `original`
    with `canary: 10`. A Canary's job is returned for the caller to start after the commit;
    ActionError or ValidationError (in words) when refused."""
    if action == "ack":
        triage.update(user, group, {"owner": user.get_username()}, reason, request_id)
    elif action == "mute":
        mutes.mute(timezone.now() + MUTE_FOR, group=group, reason=reason, actor=user,
                   request_id=request_id)  # fmt: skip
    elif action == "canary":
        target = "original"
        return control.create_job(
            user, "replay", filters={"group": group}, target=target, reason=reason,
            request_id=request_id, **control.safety(target, {"canary": CANARY}))  # fmt: skip
    else:
        raise ActionError({"action": [f"one of {', '.join(ACTIONS)}"]})
    return None


def said(error: Exception) -> str:
    """Why an action was refused, in one line (untrusted values not yet capped)."""
    if isinstance(error, ActionError):
        return "; ".join(" ".join(v) for v in error.errors.values())
    if isinstance(error, ValidationError) and hasattr(error, "message_dict"):
        return "; ".join(" ".join(v) for v in error.message_dict.values())
    return "the console refused it"
