"""Where a benchmark's CPU went: the machine's busy seconds and each process's, by role.

On this machine the broker, PostgreSQL and the console share two cores, so a figure
bound by CPU is only understood beside what each part spent. Linux only (/proc).
"""

import os
import threading

TICK = os.sysconf("SC_CLK_TCK")

# The broker's own beam.smp pids, when the bench knows them (its private cluster, beside the
# machine's other brokers): then only they and their children count as `broker`.
BROKER_PIDS: set[int] = set()


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / TICK


_COMMANDS: dict[tuple[int, str], str] = {}  # (pid, start time) -> command line


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command, CPU seconds used so far) of every live process."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            fields = stat[stat.rindex(")") + 2 :].split()
            key = (int(entry.name), fields[19])  # a reused pid has another start time
            command = _COMMANDS.get(key)
            if command is None:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
                _COMMANDS[key] = command
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
        used = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
        found[int(entry.name)] = (int(fields[1]), command, used)
    return found


def _role(pid: int, procs: dict, roots: dict[int, str]) -> str:
    """The role of a process: that of the nearest given root it descends from, else by name."""
    seen, p = set(), pid
    while p in procs and p not in seen:
        if p in roots:
            return roots[p]
        seen.add(p)
        p = procs[p][0]
    command = procs[pid][1]
    if "beam.smp" in command or "erl_child_setup" in command or "epmd" in command:
        return "other" if BROKER_PIDS else "broker"
    # A backend's title ("postgres: user db ...") is set after its fork; seen earlier, it
    # still has the server's command line (".../bin/postgres -D ...").
    if command.split(" ", 1)[0].rsplit("/", 1)[-1].startswith("postgres"):
        return "postgresql"
    return "other"


class Meter:
    """CPU seconds per role between start() and stop(). `roots` maps the pids of processes
    this run started (and so their children) to a role; the calling process is `bench`, and
    the children it waited for meanwhile (a ceiling run with subprocess.run) `waited`.

    Processes are sampled every SAMPLE seconds meanwhile, so one that ends before stop()
    (a database connection closed at the end of a job) still counts, up to its last sample.
    """

    SAMPLE = 0.1

    def __init__(self, roots: dict[int, str] | None = None):
        self.roots = dict.fromkeys(BROKER_PIDS, "broker")
        self.roots.update(roots or {})
        self.roots[os.getpid()] = "bench"

    def start(self) -> None:
        self.before = _processes()
        self.last = dict(self.before)
        self.children = _waited()
        self.busy = machine_busy()
        self.done = threading.Event()
        self.sampler = threading.Thread(target=self._sample, name="cpu-meter", daemon=True)
        self.sampler.start()

    def _sample(self) -> None:
        while not self.done.wait(self.SAMPLE):
            self.last.update(_processes())

    def stop(self) -> dict[str, float]:
        self.done.set()
        self.sampler.join()
        busy = machine_busy() - self.busy
        live = _processes()
        self.last.update(live)
        spent: dict[str, float] = {}
        for pid, (_, command, used) in self.last.items():
            earlier = self.before.get(pid)
            delta = used - (earlier[2] if earlier and earlier[1] == command else 0.0)
            role = _role(pid, self.last, self.roots)
            if role == "bench" and pid != os.getpid() and pid not in live:
                continue  # a child that ended, waited for: counted whole in `waited`
            if delta > 0:
                spent[role] = spent.get(role, 0.0) + delta
        waited = _waited() - self.children
        if waited:
            spent["waited"] = waited
        spent["machine"] = busy
        return spent


def _waited() -> float:
    times = os.times()
    return times.children_user + times.children_system


def per_message(spent: dict[str, float], n: int) -> dict[str, float]:
    """Microseconds per message, by role."""
    return {role: seconds / n * 1e6 for role, seconds in spent.items()}
