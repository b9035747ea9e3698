"""PeerPrefetch keeps `ahead` peer compiles posted, in plan order, and survives a worker restart."""
from types import SimpleNamespace

from build_tools.autotune.backend import PeerPrefetch


class FakePeerWorker:
    """Records setups and posts; a test finishes posts by dropping them from `posted`."""

    def __init__(self):
        self.posted: dict[int, float] = {}
        self.restarts = 0
        self.setups: list = []
        self.next_id = 0

    def drain(self):
        pass

    def oldest_post_age(self):
        return 0.0

    def set_entry(self, setup):
        self.setups.append(setup)

    def post(self, kind):
        assert kind == "warm_baselines"
        self.next_id += 1
        self.posted[self.next_id] = 0.0
        return self.next_id

    def restart(self):
        self.restarts += 1
        self.posted.clear()

    def finish_oldest(self):
        del self.posted[min(self.posted)]


def entries(n):
    return [SimpleNamespace(key=f"e{i}") for i in range(n)]


def test_keeps_ahead_posts_in_plan_order_and_reports_done():
    worker = FakePeerWorker()
    prefetch = PeerPrefetch(worker, lambda entry: entry.key, ahead=2)
    planned = entries(4)
    prefetch.plan(planned)
    prefetch.refresh()
    assert worker.setups == ["e0", "e1"]
    assert not prefetch.wait(planned[0], timeout=0)
    worker.finish_oldest()
    assert prefetch.wait(planned[0], timeout=0)
    assert worker.setups == ["e0", "e1", "e2"]
    assert not prefetch.wait(planned[1], timeout=0.1)


def test_posts_lost_with_a_restart_are_posted_again():
    worker = FakePeerWorker()
    prefetch = PeerPrefetch(worker, lambda entry: entry.key, ahead=2)
    planned = entries(3)
    prefetch.plan(planned)
    prefetch.refresh()
    worker.restart()
    prefetch.refresh()
    assert worker.setups == ["e0", "e1", "e0", "e1"]
    assert not prefetch.done
    worker.finish_oldest()
    worker.finish_oldest()
    assert prefetch.wait(planned[0], timeout=0) and prefetch.wait(planned[1], timeout=0)
