"""The redrive policies page: everyone reads each policy and what it matches now; admins
preview what a policy as typed would match before saving it, add, change and delete (400
naming the field for bad input, audited as through the API)."""

import pytest

from dlq.models import AuditEntry
from dlq.models.redrive import RedriveDue, RedrivePolicy
from tests.factories import make_messages, post

pytestmark = pytest.mark.django_db


def _form(prefix: str = "new", **changes) -> dict:
    fields = {"name": "flaky", "enabled": "on", "match_queue": "payments.dlq",
              "target": "original", "delay_seconds": "30", "backoff": "2", "max_attempts": "3",
              "require_consumers": "on", "trip_returns": "10", "trip_window_seconds": "300",
              "reason": "a flaky PSP", **changes}  # fmt: skip
    return {f"{prefix}-{k}": v for k, v in fields.items()}


def test_an_admin_previews_then_adds_a_policy_and_a_viewer_reads_it(admin, viewer):
    make_messages(3, queue="payments.dlq")
    make_messages(1, queue="orders.dlq")

    previewed = post(admin, "/policies/add/", {**_form(), "preview": "1"})

    assert previewed.status_code == 200
    assert "As typed, it would match 3 parked messages now." in previewed.content.decode()
    assert not RedrivePolicy.objects.exists()

    added = post(admin, "/policies/add/", _form(), follow=True)

    assert added.status_code == 200 and "Redrive policy flaky saved." in added.content.decode()
    policy = RedrivePolicy.objects.get()
    assert policy.match == {"queue": "payments.dlq"} and policy.state == "active"
    assert AuditEntry.objects.get(action="policy_create").reason == "a flaky PSP"
    page = viewer.get("/policies/").content.decode()
    assert "3 parked, 3 waiting, 0 exhausted" in page and "payments.dlq" in page
    assert "Add a redrive policy" not in page and "Change or delete" not in page


def test_bad_input_is_a_400_naming_the_field(admin):
    refused = post(admin, "/policies/add/", _form(match_queue="", delay_seconds="0"))

    assert refused.status_code == 400
    page = refused.content.decode()
    assert "greater than or equal to 1" in page or "at least 1" in page
    assert not RedrivePolicy.objects.exists()
    refused = post(admin, "/policies/add/", _form(match_queue=""))
    assert refused.status_code == 400 and "needs at least one of" in refused.content.decode()


def test_an_admin_changes_and_deletes_a_policy_and_others_may_not(admin, operator):
    post(admin, "/policies/add/", _form())
    policy = RedrivePolicy.objects.get()

    assert post(operator, f"/policies/{policy.pk}/", _form(f"p{policy.pk}")).status_code == 403
    changed = post(admin, f"/policies/{policy.pk}/", _form(f"p{policy.pk}", enabled=""))
    assert changed.status_code == 302
    assert RedrivePolicy.objects.get().state == "disabled"
    deleted = post(admin, f"/policies/{policy.pk}/delete/", {f"d{policy.pk}-reason": "gone"})
    assert deleted.status_code == 302 and not RedrivePolicy.objects.exists()
    assert post(admin, f"/policies/{policy.pk}/", _form(f"p{policy.pk}")).status_code == 404


def test_hostile_names_stay_escaped(admin, viewer):
    post(admin, "/policies/add/", _form(name="<script>x</script>", match_queue="<b>q</b>"))
    assert RedrivePolicy.objects.get().name == "<script>x</script>"
    page = viewer.get("/policies/").content.decode()
    assert "<script>x</script>" not in page and "<b>q</b>" not in page


def test_the_message_page_shows_its_redrive_state(admin, viewer):
    message = make_messages(1, queue="payments.dlq")[0]
    post(admin, "/policies/add/", _form(name="psp-timeouts"))

    page = viewer.get(f"/messages/{message.pk}/").content.decode()

    assert 'id="redrive"' in page and "psp-timeouts" in page
    assert "0 of 3 redrives done; next" in page
    RedriveDue.objects.filter(message=message).update(attempt=3, exhausted=True, next_at=None)
    page = viewer.get(f"/messages/{message.pk}/").content.decode()
    assert "3 of 3 redrives done; exhausted, it stays parked" in page


def test_policy_changes_read_as_sentences_on_the_audit_page(admin, viewer):
    post(admin, "/policies/add/", _form(name="psp-timeouts"))
    policy = RedrivePolicy.objects.get()
    post(admin, f"/policies/{policy.pk}/", _form(f"p{policy.pk}", name="psp-timeouts",
                                                 delay_seconds="60"))  # fmt: skip
    page = viewer.get("/audit/").content.decode()

    assert "added redrive policy" in page and "changed the delay of redrive policy" in page
