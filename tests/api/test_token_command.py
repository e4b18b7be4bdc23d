from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from dlq.models import ApiToken
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_it_prints_a_token_that_works():
    user = make_user("operator")
    out = StringIO()
    call_command("dlq_token", user.username, "--name", "ci", stdout=out)
    token = out.getvalue().strip()
    stored = ApiToken.objects.get(user=user)
    assert stored.name == "ci"
    assert token not in stored.token_hash
    client = Client(headers={"Authorization": f"Bearer {token}"})
    assert client.get("/api/v1/queues").status_code == 200


def test_it_refuses_an_unknown_user():
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("dlq_token", "ghost")
    assert not ApiToken.objects.exists()


def test_it_warns_when_the_user_has_no_role():
    user = make_user(None)
    out, err = StringIO(), StringIO()
    call_command("dlq_token", user.username, stdout=out, stderr=err)
    assert out.getvalue().strip().startswith("dlq_")
    assert "no role" in err.getvalue()
