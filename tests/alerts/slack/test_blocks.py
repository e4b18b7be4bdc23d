"""Slack alerts with buttons (contract: "Alerts you can act on"): each group of a digest sent
to Slack, when the console can verify presses, carries Acknowledge, Mute 1 h, Canary and
Open, within Slack's Block Kit limits, its untrusted text escaped."""

import json

import pytest

from dlq.alerts import delivery, engine
from dlq.alerts.formats import Alert, Item
from dlq.alerts.slack import blocks
from dlq.models import AlertButton, AlertChannel
from tests.alertfactory import arrive
from tests.alerts.slack.conftest import group_of
from tests.slackapi import buttons

pytestmark = pytest.mark.django_db


def _texts(alert: dict) -> list[str]:
    return [b["text"]["text"] for b in alert["blocks"] if b["type"] == "section"]


def test_each_group_of_a_digest_carries_the_four_buttons(alerted):
    per_group = buttons(alerted)

    assert len(per_group) == 2
    for row in per_group:
        assert list(row) == ["dlq_ack", "dlq_mute", "dlq_canary", "dlq_open"]
        assert [b["text"]["text"] for b in row.values()] == ["Acknowledge", "Mute 1 h", "Canary",
                                                             "Open"]  # fmt: skip
        ref = row["dlq_ack"]["value"]
        assert row["dlq_mute"]["value"] == row["dlq_canary"]["value"] == ref
        assert "value" not in row["dlq_open"]  # a link: no callback
        assert row["dlq_open"]["url"] == f"https://console.example/groups/{group_of(ref)}/"
        assert row["dlq_canary"]["confirm"]["confirm"]["text"] == "Start"
    refs = {row["dlq_ack"]["value"] for row in per_group}
    assert set(AlertButton.objects.values_list("ref", flat=True)) == refs
    # Each group's section is its line, just above its buttons.
    kinds = [b["type"] for b in alerted["blocks"]]
    first = kinds.index("actions")
    assert "OrderPlaced · TimeoutError" in alerted["blocks"][first - 1]["text"]["text"]
    assert kinds.count("actions") == 2 and len(kinds) <= 50


def test_without_the_signing_secret_the_alert_has_no_buttons(slack, default_rule, settings):
    settings.DLQ_SLACK_SIGNING_SECRET = ""
    AlertChannel.objects.create(kind="slack", name="ops", config={"url": slack.hook})
    arrive("orders.dlq", 2)
    for attempt_id in engine.evaluate():
        delivery.deliver_now(attempt_id)

    [alert] = slack.alerts()
    assert {b["type"] for b in alert["blocks"]} == {"section"}
    assert "Top failure groups" in "\n".join(_texts(alert))
    assert not AlertButton.objects.exists()


def _hostile(n: int, **changes) -> Item:
    name = "<!channel> *bold* `tick` " + "x" * 400
    return Item(name, 7, f"https://console.example/messages?group=g{n}", [("in", "<@U1>" * 80)],
                data={"group": f"g{n}"}, ref=f"ref-{n:02d}", **changes)  # fmt: skip


def test_it_stays_within_slacks_limits_and_escapes_what_it_did_not_write():
    alert = Alert("10 new dead-lettered messages", "Arrived now.", "https://console.example/",
                  label="<!here>", groups=[_hostile(n) for n in range(30)])  # fmt: skip
    alert.groups[0].state, alert.groups[0].data["acknowledged_by"] = "acknowledged", "<b>&"
    alert.groups[1].state = "resolved"

    made = blocks.payload(alert, note="`oper` acknowledged `x`")

    assert len(made["blocks"]) <= 50
    assert made["blocks"][-1]["type"] == "context"
    assert "more groups" in json.dumps(made["blocks"])  # those that did not fit are counted
    for block in made["blocks"]:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        for element in block["elements"] if block["type"] == "actions" else []:
            assert len(element["text"]["text"]) <= 75
            assert len(element.get("value", "")) <= 2000
    everything = json.dumps(made)
    assert "<!channel>" not in everything and "<!here>" not in everything
    assert "<@U1>" not in everything
    sections = _texts(made)
    assert any("_acknowledged by_ `&lt;b&gt;&amp;`" in t for t in sections)
    assert any("_resolved" in t for t in sections)


def test_an_alert_without_references_reads_as_before():
    group = Item("KeyError", 3, "https://console.example/m", data={"group": "g"})
    alert = Alert("A drainer stopped reporting", "x.", "https://console.example/", groups=[group])

    made = blocks.payload(alert)

    assert [b["type"] for b in made["blocks"]] == ["section"] * 3
    assert made["text"] == "A drainer stopped reporting"
