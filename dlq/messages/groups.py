"""What a failure group is called: the message type, the exception type and the first line
of its message (or how and where it died), from one of its messages. Here, below dlq/groups/,
because the words of a selection (selections) name groups too."""

from dlq.models import Message

NAME_FIELDS = ("death_reason", "exception_type", "exception_message", "failed_queue",
               "message_type")  # fmt: skip


def group_name(m: Message) -> str:
    """What failed, as a reader says it: the message type, then the exception type and the
    first line of its message, or the death reason and the queue it died in."""
    if m.exception_type or m.exception_message:
        failure = ": ".join(filter(None, [m.exception_type, first_line(m.exception_message)]))
    else:
        failure = " in ".join(filter(None, [m.death_reason or "no death reason", m.failed_queue]))
    return " · ".join(filter(None, [m.message_type, failure]))


def first_line(text: str) -> str:
    return (text or "").strip().split("\n", 1)[0][:120]


def name_of(group: str) -> str | None:
    """The group's name from its newest stored message (msg_group_id); None when none is."""
    newest = Message.objects.filter(group=group).order_by("-id").only(*NAME_FIELDS).first()
    return group_name(newest) if newest else None
