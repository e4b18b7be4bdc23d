"""Every action endpoint is in the OpenAPI schema, with its bodies and its answers."""

import pytest

from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db

ACTIONS = {
    ("/api/v1/messages/{id}", "patch"): "200",
    ("/api/v1/messages/{id}/replay", "post"): "200",
    ("/api/v1/messages/{id}/discard", "post"): "200",
    ("/api/v1/messages/{id}/restore", "post"): "200",
    ("/api/v1/jobs", "post"): "202",
    ("/api/v1/jobs/{id}/cancel", "post"): "200",
}
READS = [
    ("/api/v1/messages/{id}/route", "get"),
    ("/api/v1/jobs/{id}", "get"),
    ("/api/v1/audit", "get"),
]


@pytest.fixture
def schema(db):
    """As a signed-in viewer reads it (the schema is not public)."""
    return client_for(make_user("viewer")).get("/api/v1/openapi.json").json()


def test_it_documents_every_action_with_its_status_codes(schema):
    for (path, method), ok in ACTIONS.items():
        operation = schema["paths"][path][method]
        assert {ok, "400", "401", "403"} <= set(operation["responses"]), (path, method)
        if "{id}" in path:
            assert {"404", "409"} <= set(operation["responses"]), (path, method)
        if method != "post" or not path.endswith("cancel"):
            assert "requestBody" in operation, (path, method)
    for path, method in READS:
        assert {"200", "400", "401", "403"} <= set(schema["paths"][path][method]["responses"])


def test_it_documents_the_bodies(schema):
    components = schema["components"]["schemas"]
    edit = components["EditIn"]
    assert edit["required"] == ["reason"]
    assert edit["properties"]["headers"]["anyOf"][0]["additionalProperties"] == {
        "$ref": "#/components/schemas/TypedValue"
    }
    assert "typed JSON" in edit["properties"]["headers"]["description"]
    properties = set(components["PropertiesIn"]["properties"])
    assert {"content_type", "priority", "timestamp"} <= properties
    target = components["ReplayIn"]["properties"]["target"]
    assert {"$ref": "#/components/schemas/CustomTarget"} in target["anyOf"]
    assert components["CustomTarget"]["required"] == ["exchange", "routing_key"]
    assert "typed" in schema["paths"]["/api/v1/messages/{id}/replay"]["post"]["description"]
    job = components["JobIn"]
    assert set(job["properties"]) >= {"action", "ids", "filter", "target", "rate_per_s", "reason"}
    outcomes = components["ReplayOut"]["properties"]["outcome"]["enum"]
    assert outcomes == ["confirmed", "unroutable", "nacked", "error"]


def test_it_documents_the_audit_filters_and_the_csv_export(schema):
    audit = schema["paths"]["/api/v1/audit"]["get"]
    params = {p["name"] for p in audit["parameters"]}
    assert {"cursor", "limit", "actor", "action", "message", "job", "after", "before"} <= params
    assert "format" in params
    assert set(audit["responses"]["200"]["content"]) == {"application/json", "text/csv"}
