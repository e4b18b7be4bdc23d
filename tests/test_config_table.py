"""The README's configuration table against the code: every variable the console reads is
documented, every documented one is read, and the documented defaults are the real ones."""

import ast
import re

from tests import ROOT

READERS = {"env_str", "env_int", "env_bool", "env_list", "env_url", "env_urls", "env_float",
           "env_link_template", "env_networks", "env_patterns", "env_role_map", "env_header",
           "env_choice", "raw"}  # fmt: skip
# Defaults described in words in the README, on purpose (secrets, generated values).
DESCRIBED = {"SECRET_KEY", "DLQ_ADMIN_PASSWORD", "DLQ_METRICS_TOKEN", "DLQ_OIDC_DISCOVERY_URL",
             "DLQ_OIDC_CLIENT_ID", "DLQ_OIDC_CLIENT_SECRET", "DLQ_TRACE_URL",
             "DLQ_SLACK_SIGNING_SECRET", "DLQ_TELEGRAM_WEBHOOK_SECRET"}  # fmt: skip
ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]+)` \| (.*?) \| .* \|$")


def read_in_code() -> dict[str, object]:
    """{variable: default} for every env helper call in the console's code."""
    found = {}
    for path in [*ROOT.glob("console/*.py"), *ROOT.glob("dlq/**/*.py")]:
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id in READERS and node.args and isinstance(node.args[0], ast.Constant):
                found[node.args[0].value] = _default(node)
    return found


def _default(call: ast.Call):
    if len(call.args) < 2:
        return None
    try:  # literals and constant arithmetic such as 16 * 1024 * 1024
        return eval(
            compile(ast.Expression(call.args[1]), "<default>", "eval"), {"__builtins__": {}}
        )
    except NameError:
        return None  # another setting (CELERY_BROKER_URL defaults to DLQ_BROKER_URL)


def documented() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return {m[1]: m[2] for line in section.splitlines() if (m := ROW.match(line))}


def as_documented(value) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def test_every_variable_read_is_documented_and_every_documented_one_is_read():
    code, readme = read_in_code(), documented()
    assert sorted(set(code) - set(readme)) == [], "read but not in the README table"
    assert sorted(set(readme) - set(code)) == [], "in the README table but never read"


def test_documented_defaults_are_the_real_ones():
    code, readme = read_in_code(), documented()
    wrong = {
        name: (readme[name], as_documented(default))
        for name, default in code.items()
        if default is not None and name not in DESCRIBED and readme[name] != as_documented(default)
    }
    assert wrong == {}
