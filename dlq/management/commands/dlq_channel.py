from django.core.management.base import BaseCommand, CommandError

from dlq.alerts import channels
from dlq.models import AlertChannel, AttemptStatus


class Command(BaseCommand):
    help = "Manage alert channels: add, list (secrets masked), remove, test."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True)
        add = commands.add_parser("add", help="add a channel").add_subparsers(
            dest="kind", required=True
        )
        slack = add.add_parser("slack", help="a Slack incoming webhook")
        slack.add_argument("url", metavar="WEBHOOK_URL")
        telegram = add.add_parser("telegram", help="a Telegram bot and chat")
        telegram.add_argument("token", metavar="BOT_TOKEN")
        telegram.add_argument("chat_id", metavar="CHAT_ID")
        webhook = add.add_parser("webhook", help="a URL that receives the alert as JSON")
        webhook.add_argument("url", metavar="URL")
        for kind in (slack, telegram, webhook):
            kind.add_argument("--name", default="", help="default: the kind (slack, slack-2...)")
        commands.add_parser("list", help="list channels, secrets masked")
        commands.add_parser("remove", help="delete a channel").add_argument("name")
        commands.add_parser("test", help="send a test alert").add_argument("name")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except channels.ChannelError as e:
            raise CommandError(str(e)) from None

    def do_add(self, kind, name="", url="", token="", chat_id="", **_):
        channel = channels.create_channel(kind, name, url=url, token=token, chat_id=chat_id)
        self.stdout.write(f"added {channel.kind} channel {channel.name} ({channel.masked})")

    def do_list(self, **_):
        rows = channels.list_channels()
        if not rows:
            self.stdout.write("no alert channels")
        for row in rows:
            state = "enabled" if row["enabled"] else f"disabled: {row['disabled_reason']}"
            self.stdout.write(f"{row['name']}\t{row['kind']}\t{row['destination']}\t{state}")

    def do_remove(self, name, **_):
        channels.delete_channel(self._channel(name))
        self.stdout.write(f"removed {name}")

    def do_test(self, name, **_):
        attempt = channels.send_test(self._channel(name))
        if attempt.status == AttemptStatus.SENT:
            self.stdout.write(f"test alert sent to {name} (HTTP {attempt.http_status})")
            return
        outcome = f"test alert to {name}: {attempt.status}"
        if attempt.status == AttemptStatus.QUEUED:
            outcome += f" (the worker retries it at {attempt.not_before:%H:%M:%S} UTC)"
        raise CommandError(f"{outcome}: {attempt.error}" if attempt.error else outcome)

    def _channel(self, name: str) -> AlertChannel:
        channel = AlertChannel.objects.filter(name=name).first()
        if channel is None:
            raise CommandError(f"no alert channel named {name!r} (see: dlq_channel list)")
        return channel
