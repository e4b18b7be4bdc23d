import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.utils import timezone

from dlq.alerts import delivery, engine
from dlq.alerts.formats import Alert, Item, units
from dlq.alerts.transports import SlackNotifier, TelegramNotifier, WebhookNotifier
from tests.alertfactory import add_channel, arrive, sent_to

pytestmark = pytest.mark.django_db

HOSTILE = "<b>&</b> `rm -rf` *bold* _it_ ~gone~ <script>alert(1)</script> <!channel> &amp;"
HOSTILE_QUEUE = "q`*_~<i>&.dlq"
BROKEN_ENTITY = re.compile(r"&(?!(?:amp|lt|gt|quot);)")


class Tags(HTMLParser):
    """The tags of a Telegram HTML text, checked to be balanced, and its visible text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.seen, self.open, self.text = set(), [], ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.seen.add(tag)
        self.open.append(tag)
        if tag == "a":
            assert dict(attrs)["href"].startswith("https://console.example/")

    def handle_endtag(self, tag):
        assert self.open.pop() == tag

    def handle_data(self, data):
        self.text += data


def check_slack(text: str) -> None:
    """Untrusted text is only ever inside code spans; outside them, only our markup."""
    for line in text.split("\n"):
        assert line.count("`") % 2 == 0, line
        outside = "".join(line.split("`")[::2])
        outside = re.sub(r"<https://console\.example/[^|<>`]*\|[a-zA-Z ]+>", "", outside)
        assert "~" not in outside and "_" not in outside and "<" not in outside
        assert not BROKEN_ENTITY.search(line), line


def hostile_alert(count: int) -> Alert:
    items = [
        Item(f"{HOSTILE} {i}", i, "https://console.example/messages?queue=q", [("in", HOSTILE)])
        for i in range(count)
    ]
    return Alert("Title", "Summary", "https://console.example/", HOSTILE, items, items)


def test_it_escapes_hostile_content_for_slack_and_telegram(default_rule, endpoint):
    for kind in ("slack", "telegram", "webhook"):
        add_channel(kind, endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive(HOSTILE_QUEUE, 2, exception=HOSTILE, died_in=HOSTILE, at=t0)

    for attempt_id in engine.evaluate(t0):
        assert delivery.deliver_now(attempt_id).status == "sent"

    [slack] = sent_to(endpoint, "slack")
    texts = [block["text"]["text"] for block in slack.json()["blocks"]]
    for text in texts:
        check_slack(text)
    assert "`&lt;b&gt;&amp;&lt;/b&gt; ˋrm -rfˋ *bold* _it_ ~gone~ &lt;script&gt;" in texts[2]
    assert "`qˋ*_~&lt;i&gt;&amp;.dlq`" in texts[1]

    [telegram] = sent_to(endpoint, "telegram")
    html = telegram.json()["text"]
    tags = Tags(html)
    assert tags.seen <= {"b", "code", "a"} and tags.open == []
    assert HOSTILE.replace("  ", " ") in tags.text
    assert "<code>&lt;b&gt;&amp;&lt;/b&gt; `rm -rf` *bold* _it_ ~gone~ &lt;script&gt;" in html

    [webhook] = sent_to(endpoint, "webhook")
    group = webhook.json()["groups"][0]
    assert (group["exception_type"], group["queue"]) == (HOSTILE, HOSTILE_QUEUE)


def test_it_cuts_telegram_texts_to_4096_without_breaking_tags():
    payload = TelegramNotifier("http://t", "1:x", "1").payload(hostile_alert(300))
    text = payload["text"]
    assert 3500 < units(text) <= 4096
    assert text.endswith("more lines")
    assert Tags(text).open == []
    assert not BROKEN_ENTITY.search(text)


def test_it_cuts_slack_sections_to_3000_without_breaking_escapes():
    payload = SlackNotifier("http://s/hook").payload(hostile_alert(300))
    texts = [block["text"]["text"] for block in payload["blocks"]]
    assert all(units(t) <= 3000 for t in texts)
    assert any(t.endswith("more lines") for t in texts)
    for text in texts:
        check_slack(text)


def test_it_cuts_one_long_value_before_escaping_it():
    alert = Alert("T", "S", "https://console.example/", label="&" * 5000)
    text = TelegramNotifier("http://t", "1:x", "1").payload(alert)["text"]
    assert units(text) < 1000 and not BROKEN_ENTITY.search(text)
    assert "&amp;" * 100 in text and text.count("&amp;") < 150


def test_it_gives_webhooks_the_raw_values():
    payload = WebhookNotifier("http://w/hook").payload(hostile_alert(2))
    assert payload["rule"] == HOSTILE
    assert HOSTILE in payload["text"]
