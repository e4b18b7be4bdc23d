"""The group page's form through the test client (issue 27, point 1): operators only, every
refusal a 400 naming the field with nothing saved, and "Take it" with no reason typed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.models import AuditEntry, GroupTriage
from tests.factories import make_message, post

pytestmark = pytest.mark.django_db


def _form(**fields) -> dict:
    return {"owner": "", "note": "", "ticket_url": "", "hold_until": "", "tz": "",
            "reason": "triage", **fields}  # fmt: skip


def test_viewers_see_no_form_and_may_not_post(viewer):
    group = make_message().group
    page = viewer.get(f"/groups/{group}/").content.decode()
    assert 'id="triage-form"' not in page and "nobody" in page
    assert post(viewer, f"/groups/{group}/change/", _form(note="x")).status_code == 403
    assert not GroupTriage.objects.filter(group=group).exists()


def test_take_it_makes_the_reader_the_owner(operator):
    group = make_message().group
    user = operator.session["_auth_user_id"]
    response = post(operator, f"/groups/{group}/change/", _form(take="1", reason=""))
    assert response.status_code == 302
    triage = GroupTriage.objects.get(group=group)
    assert str(triage.owner_id) == user
    assert AuditEntry.objects.get(action="group_update").reason == "taking it"
    assert "investigating" in operator.get(f"/groups/{group}/").content.decode()


def test_bad_input_is_refused_naming_the_field(operator, unique):
    group = make_message().group
    past = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    for fields, name in [({"owner": f"ghost-{unique}"}, "owner"),
                         ({"ticket_url": "javascript:alert(1)"}, "ticket_url"),
                         ({"hold_until": past}, "hold_until"),
                         ({"hold_until": "soon"}, "hold_until"),
                         ({"tz": "Mars/Olympus"}, "tz"),
                         ({"note": "n" * 10_001}, "note"),
                         ({"reason": " "}, "reason")]:  # fmt: skip
        response = post(operator, f"/groups/{group}/change/", _form(**fields))
        assert response.status_code == 400, fields
        assert f"<code>{name}</code>" in response.content.decode(), fields
    assert not AuditEntry.objects.filter(action="group_update").exists()
    assert post(operator, "/groups/0000000000000000/change/", _form()).status_code == 404
