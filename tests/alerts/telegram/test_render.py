"""An alert as a Telegram message within Telegram's limits: 4096 characters of text whose
tags are whole, callback_data of 64 bytes, 100 buttons; untrusted names escaped."""

from dlq.alerts.formats import Alert, Item, units
from dlq.alerts.telegram import render
from tests.alerts.test_escaping import BROKEN_ENTITY, HOSTILE, Tags


def _alert(groups: int, url: str = "https://console.example/messages?group=g") -> Alert:
    items = [Item(HOSTILE * 3, 5, url, [("in", HOSTILE)], data={"group": f"g{n}"},
                  ref=f"{n:016d}", state="open", owner=HOSTILE if n % 2 else "")
             for n in range(groups)]  # fmt: skip
    return Alert("T", "S", "https://console.example/", label=HOSTILE, groups=items)


def test_a_big_hostile_alert_stays_within_telegrams_limits():
    made = render.message(_alert(40))
    assert units(made["text"]) <= 4096 and Tags(made["text"]).open == []
    assert not BROKEN_ENTITY.search(made["text"]) and "<script>" not in made["text"]
    buttons = [b for row in made["reply_markup"]["inline_keyboard"] for b in row]
    assert len(buttons) == 100  # 25 rows of 4: the rest have no room
    assert all(len(b["callback_data"].encode()) <= 64 for b in buttons if "callback_data" in b)
    assert "2 · " in made["text"] and "<b>acknowledged</b> by <code>&lt;b&gt;" in made["text"]


def test_a_resolved_group_keeps_its_link_only_and_a_local_console_gets_none():
    alert = _alert(2)
    alert.groups[0].state = "resolved"
    rows = render.keyboard(alert)["inline_keyboard"]
    assert [b["text"] for b in rows[0]] == ["1 · Open"]
    assert len(rows[1]) == 4
    for url in ("http://localhost:8000/messages", "http://dlq/messages", "javascript:alert(1)"):
        rows = render.keyboard(_alert(1, url))["inline_keyboard"]
        assert [b["text"] for b in rows[0]] == ["1 · Acknowledge", "1 · Mute 1 h", "1 · Canary"]


def test_without_buttons_the_text_is_as_before():
    alert = _alert(1)
    alert.groups[0].ref = ""
    made = render.message(alert)
    assert "reply_markup" not in made and "\n• <code>" in made["text"]
