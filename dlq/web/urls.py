"""The console's pages. Each area's pages share a URL namespace named for it (alerts,
messages, groups, bulk, jobs, audit, tokens, users, targets, policies, health, account), which
templates and redirects reverse; the views live in the module of that area. The overview is
the root's own page."""

from django.urls import include, path

from dlq.web import (
    account,
    alerts,
    audit,
    bulk,
    groups,
    health,
    jobs,
    message_actions,
    messages,
    overrides,
    overview,
    policies,
    sent_alerts,
    telegram,
    tokens,
    users,
)

alert_pages = [
    path("", alerts.channel_list, name="channels"),
    path("channels/add/<str:kind>/", alerts.channel_add, name="add"),
    path("channels/<int:pk>/edit/", alerts.channel_edit, name="edit"),
    path("channels/<int:pk>/enable/", alerts.channel_enable, name="enable"),
    path("channels/<int:pk>/disable/", alerts.channel_disable, name="disable"),
    path("channels/<int:pk>/delete/", alerts.channel_delete, name="delete"),
    path("channels/<int:pk>/test/", alerts.channel_test, name="test"),
    path("attempts/", alerts.attempt_list, name="attempts"),
    path("sent/", sent_alerts.sent_list, name="sent"),
    path("sent/act/", sent_alerts.act, name="act"),
    path("rules/", alerts.rule_list, name="rules"),
    path("rules/add/", alerts.rule_edit, name="rule_add"),
    path("rules/<int:pk>/edit/", alerts.rule_edit, name="rule_edit"),
    path("mutes/add/", alerts.mute_add, name="mute_add"),
    path("mutes/<int:pk>/delete/", alerts.mute_delete, name="mute_delete"),
]

message_pages = [
    path("", messages.message_list, name="list"),
    path("count/", messages.message_count, name="count"),
    path("<int:pk>/", messages.message_detail, name="detail"),
    path("<int:pk>/raw/", messages.message_raw, name="raw"),
    path("<int:pk>/route/", messages.route_preview, name="route"),
    path("<int:pk>/edit/", message_actions.message_edit, name="edit"),
    path("<int:pk>/replay/", message_actions.message_replay, name="replay"),
    path("<int:pk>/discard/", message_actions.message_discard, name="discard"),
    path("<int:pk>/restore/", message_actions.message_restore, name="restore"),
    path(
        "<int:pk>/versions/<int:number>/restore/",
        message_actions.message_restore_version,
        name="restore_version",
    ),
]

group_pages = [
    path("", groups.group_list, name="list"),
    path("<str:group>/", groups.group_detail, name="detail"),
    path("<str:group>/change/", groups.group_change, name="change"),
]

bulk_pages = [path("review/", bulk.bulk_review, name="review")]

job_pages = [
    path("", jobs.job_list, name="list"),
    path("<int:pk>/", jobs.job_detail, name="detail"),
    path("<int:pk>/cancel/", jobs.job_cancel, name="cancel"),
    path("<int:pk>/resume/", jobs.job_resume, name="resume"),
    path("<int:pk>/retry-failed/", jobs.job_retry_failed, name="retry_failed"),
]

audit_pages = [path("", audit.audit_list, name="list")]

token_pages = [
    path("", tokens.token_list, name="list"),
    path("add/", tokens.token_add, name="add"),
    path("<int:pk>/revoke/", tokens.token_revoke, name="revoke"),
]

user_pages = [
    path("", users.user_list, name="list"),
    path("add/", users.user_add, name="add"),
    path("<int:pk>/deactivate/", users.user_deactivate, name="deactivate"),
    path("<int:pk>/activate/", users.user_activate, name="activate"),
]

override_pages = [
    path("", overrides.override_list, name="list"),
    path("add/", overrides.override_save, name="add"),
    path("<int:pk>/", overrides.override_save, name="change"),
    path("<int:pk>/delete/", overrides.override_delete, name="delete"),
]

policy_pages = [
    path("", policies.policy_list, name="list"),
    path("add/", policies.policy_save, name="add"),
    path("<int:pk>/", policies.policy_save, name="change"),
    path("<int:pk>/delete/", policies.policy_delete, name="delete"),
]

account_pages = [
    path("", account.account_page, name="page"),
    path("telegram/", account.telegram_link, name="telegram"),
    path("links/<int:pk>/unlink/", account.unlink, name="unlink"),
    path("link/slack/<str:code>/", account.slack_link, name="slack"),
]

health_pages = [
    path("topology/", health.topology_health, name="topology"),
    path("topology/acknowledge/", health.topology_acknowledge, name="acknowledge"),
    path("topology/withdraw/", health.topology_withdraw, name="withdraw"),
    path("drainers/", health.drainers, name="drainers"),
]

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("alerts/", include((alert_pages, "alerts"))),
    path("messages/", include((message_pages, "messages"))),
    path("groups/", include((group_pages, "groups"))),
    path("bulk/", include((bulk_pages, "bulk"))),
    path("jobs/", include((job_pages, "jobs"))),
    path("audit/", include((audit_pages, "audit"))),
    path("tokens/", include((token_pages, "tokens"))),
    path("users/", include((user_pages, "users"))),
    path("replay-overrides/", include((override_pages, "overrides"))),
    path("replay-targets/", overrides.old_address, name="old_overrides"),
    path("policies/", include((policy_pages, "policies"))),
    path("account/", include((account_pages, "account"))),
    path("", include((health_pages, "health"))),
    # Chats calling in: no session, each request proves itself (dlq/web/telegram.py).
    path("integrations/telegram/webhook", telegram.webhook, name="telegram-webhook"),
]
