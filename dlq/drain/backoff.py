"""How long the drainer waits before it tries the broker, or the database, again."""

import random


class Backoff:
    """0.5 s doubling to a cap, with jitter so that many drainers do not retry in step."""

    def __init__(self, first: float = 0.5, cap: float = 30.0):
        self.first, self.cap, self.current = first, cap, first

    def next(self) -> float:
        wait = self.current * random.uniform(0.8, 1.2)
        self.current = min(self.current * 2, self.cap)
        return wait

    def reset(self) -> None:
        self.current = self.first
