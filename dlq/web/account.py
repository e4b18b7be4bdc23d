"""The account page: the signed-in user's Slack and Telegram links (and, for admins,
everyone's), a Telegram deep link to link one, and the page a Slack user's one-time link
opens. Linking and unlinking are dlq/alerts/links.py's, audited there."""

from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from dlq.accounts.roles import ADMIN, VIEWER, has_role
from dlq.alerts import links
from dlq.alerts.telegram import bots
from dlq.models import ChatLink, ChatVia
from dlq.web.access import role_view


@require_safe
@role_view(VIEWER)
def account_page(request):
    return _page(request)


def _page(request, deep_link: dict | None = None):
    mine = ChatLink.objects.filter(user=request.user).order_by("via", "created_at")
    everyone = None
    if has_role(request.user, ADMIN):
        everyone = ChatLink.objects.select_related("user").order_by("user__username", "via",
                                                                    "created_at")  # fmt: skip
    context = {
        "links": mine,
        "everyone": everyone,
        "bots": bots.known(),
        "deep_link": deep_link,
        "slack_buttons": bool(settings.DLQ_SLACK_SIGNING_SECRET),
        "telegram_updates": settings.DLQ_TELEGRAM_UPDATES,
    }
    return render(request, "account/page.html", context)


@require_POST
@role_view(VIEWER)
def telegram_link(request):
    """A new one-time code for a known bot, shown once as the bot's deep link (only its hash
    is stored, so the page is rendered here rather than after a redirect)."""
    bot = next((b for b in bots.known() if b.key == request.POST.get("bot")), None)
    if bot is None:
        raise Http404("no such Telegram bot: an admin adds a Telegram channel")
    code = links.telegram_code(request.user, bot.key)
    deep_link = {
        "bot": bot.username,
        "url": f"https://t.me/{quote(bot.username, safe='')}?start={code}",
        "until": timezone.now() + links.VALID,
    }
    return _page(request, deep_link)


@require_POST
@role_view(VIEWER)
def unlink(request, pk: int):
    """Remove one of your links; an admin may remove anyone's (audited, the admin as actor)."""
    found = get_object_or_404(ChatLink.objects.select_related("user"), pk=pk)
    mine = found.user_id == request.user.pk
    if not mine and not has_role(request.user, ADMIN):
        raise Http404("no such link of yours")  # another user's link is not even named
    reason = "unlinked on the account page" if mine else (
        f"removed by the admin {request.user.get_username()}")  # fmt: skip
    links.unlink(found, request.user, reason)
    whose = "" if mine else f" of {found.user.get_username()}"
    messages.success(request, f"Unlinked the {found.get_via_display()} user "
                              f"{found.chat_name or found.chat_user}{whose}.")  # fmt: skip
    return redirect("account:page")


@require_http_methods(["GET", "HEAD", "POST"])
@role_view(VIEWER)
def slack_link(request, code: str):
    """The one-time link an unlinked Slack user's press replied with: GET asks (and never
    links), POST (with CSRF) links that Slack user to whoever is signed in."""
    try:
        if request.method == "POST":
            made = links.redeem(code, ChatVia.SLACK, user=request.user)
        else:
            pending = links.pending(code, ChatVia.SLACK)
    except links.LinkError as e:
        status = 410 if isinstance(e, links.CodeGone) else 400
        return render(request, "account/slack_link.html", {"error": str(e)}, status=status)
    if request.method == "POST":
        messages.success(request, f"Your console account is now linked to the Slack user "
                                  f"{made.chat_name or made.chat_user}.")  # fmt: skip
        return redirect("account:page")
    before = links.linked_user(ChatVia.SLACK, pending.chat_user)
    context = {"pending": pending, "before": before, "code": code}
    return render(request, "account/slack_link.html", context)
