import pytest

from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db


def test_it_serves_the_schema_with_the_endpoints():
    response = client_for(make_user("viewer")).get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert {"/api/v1/queues", "/api/v1/messages", "/api/v1/messages/{id}"} <= set(schema["paths"])
    listing = schema["paths"]["/api/v1/messages"]["get"]
    params = {p["name"] for p in listing["parameters"]}
    assert {"cursor", "limit", "queue", "status", "reason", "exchange", "routing_key"} <= params
    assert {"exception_type", "group", "received_after", "received_before", "q"} <= params
    assert {"200", "400", "401", "403"} <= set(listing["responses"])


def test_it_documents_the_typed_header_encoding():
    schema = client_for(make_user("viewer")).get("/api/v1/openapi.json").json()
    components = schema["components"]["schemas"]
    detail = components["MessageDetail"]["properties"]
    ref = detail["headers"]["additionalProperties"]
    assert ref == {"$ref": "#/components/schemas/TypedValue"}
    typed = components["TypedValue"]
    assert typed["required"] == ["type"]
    assert "int8" in typed["properties"]["type"]["enum"]
    assert '"type": "decimal"' in typed["description"]
    assert "base64" in detail["properties"]["description"]


def test_it_serves_the_docs_page_from_local_static_files():
    response = client_for(make_user("viewer")).get("/api/v1/docs")
    assert response.status_code == 200
    assert b"/static/ninja/swagger-ui-bundle.js" in response.content
    assert b"cdn" not in response.content.lower()
