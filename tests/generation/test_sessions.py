"""Engine sessions per client: history that grows, least-recently-used eviction, exclusive leases, attaching."""

import anyio
import pytest

from nexus_gateway.engine import Turn
from nexus_gateway.engine.worker import LocalEngine
from nexus_gateway.generation.sessions import PENDING_TURNS, SessionPool, follows_up, only_new_values
from tests.engine.conftest import settings

pytestmark = pytest.mark.anyio


async def test_a_client_session_keeps_its_history_and_the_least_recently_used_is_evicted(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 2, max_depth=400)
            async with pool.lease("a") as a:
                pool.defer("a", Turn("hi", "{}"))
            await pool.settle("a")
            async with pool.lease("a") as a:
                grown = await pool.depth(a)
            async with pool.lease("b") as b:
                assert await pool.depth(b) == 0
            async with pool.lease("a") as again:
                assert again == a and await pool.depth(again) == grown > 0
            async with pool.lease("c"):
                pass
            assert pool.evictions == 1 and len(pool) == 2
            async with pool.lease("a") as kept:  # "b" was the least recently used, so "a" survived
                assert kept == a and await pool.depth(kept) == grown


async def test_a_session_too_deep_is_rebuilt_from_its_latest_turn(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=1), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 1, max_depth=40)
            for number in range(6):
                async with pool.lease("a"):
                    pool.defer("a", Turn(f"turn {number}", "{}"))
                await pool.settle("a")
            async with pool.lease("a") as a:
                assert 0 < await pool.depth(a) <= 40


async def test_a_deferred_turn_is_in_the_session_before_the_next_lease_or_after_settle(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 2, max_depth=400)
            async with pool.lease("a") as a:
                pool.defer("a", Turn("hi", "{}"))
                assert await pool.depth(a) == 0  # queued, not decoded yet
            async with pool.lease("a") as again:  # the next lease decodes it first
                first = await pool.depth(again)
                pool.defer("a", Turn("and again", "{}"))
            await pool.settle("a")
            async with pool.lease("a") as settled:
                assert 0 < first < await pool.depth(settled)


async def test_attaching_does_not_wait_for_a_turn_being_decoded_and_queues_behind_it(tmp_path):
    """A request that stands alone only attaches to its client's session: while the last turn is still being
    decoded under the lease (`settle`), attaching returns at once; its own turn is queued and decoded after."""
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 2, max_depth=400)
            async with pool.attach("a") as a:
                pool.defer("a", Turn("first", "{}"))
            held, release = anyio.Event(), anyio.Event()

            async def holder() -> None:
                async with pool.lease("a"):  # decodes "first", then keeps the session
                    held.set()
                    await release.wait()

            async with anyio.create_task_group() as group:
                group.start_soon(holder)
                await held.wait()
                with anyio.fail_after(5):  # not behind the lease
                    async with pool.attach("a") as attached:
                        assert attached == a
                        depth = await pool.depth(attached)
                        pool.defer("a", Turn("second", "{}"))
                assert depth > 0  # "first" was decoded when the lease began
                release.set()
            await pool.settle("a")
            async with pool.lease("a") as settled:
                assert await pool.depth(settled) > depth


async def test_a_fork_counts_against_the_pool_and_holds_its_sessions_history(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 2, max_depth=400)
            async with pool.lease("a") as a:
                pool.defer("a", Turn("hi", "{}"))
            await pool.settle("a")
            async with pool.lease("a") as a:
                async with pool.fork(a) as fork:
                    assert fork is not None and fork != a
                    assert await pool.depth(fork) == await pool.depth(a) > 0
                    async with pool.fork(a) as none:  # the second slot is the fork's: no third sequence
                        assert none is None
                async with pool.lease("b") as b:  # the fork gave its slot back
                    assert await pool.depth(b) == 0
                async with pool.fork(a) as full:  # "a" and "b" hold both slots, and a fork evicts no one
                    assert full is None
            assert pool.evictions == 0 and len(pool) == 2


async def test_a_fresh_session_holds_only_the_preamble_and_counts_against_the_pool(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            pool = SessionPool(engine, 2, max_depth=400)
            async with pool.lease("a") as a:
                pool.defer("a", Turn("hi", "{}"))
            async with pool.lease("a") as a:
                assert await pool.depth(a) > 0
                async with pool.fresh() as fresh:
                    assert fresh is not None and fresh != a and await pool.depth(fresh) == 0
                    async with pool.fresh() as none:  # the client's and the fresh one fill the pool
                        assert none is None
                async with pool.fresh() as again:  # the first was given back
                    assert again is not None


@pytest.mark.parametrize(
    ("request_text", "back"),
    [
        ("What is the current weather in Paris again?", True),
        ("and in Tokyo?", True),
        ("now do the same for Berlin", True),
        ("delete that file", True),
        ("what about the forecast", True),
        ("what time is it in Paris?", False),
        ("read the file /tmp/hello.txt", False),
        ("create an issue in acme/api called Add dark mode", False),
        ("put it back to the previous version", True),  # it may be: the history is read
    ],
)
def test_a_request_follows_up_when_it_refers_back_to_an_earlier_turn(request_text: str, back: bool):
    assert follows_up(request_text) is back


class _Sessions:
    """An engine that opens sessions and decodes turns by counting them."""

    def __init__(self) -> None:
        self.opened, self.turns = 0, []

    async def open_session(self):
        self.opened += 1
        return self.opened

    async def append_turn(self, session, turn, *, max_depth):
        self.turns.append(turn.request)

    async def close_session(self, session):
        pass


async def test_turns_queued_back_to_back_keep_only_the_latest():
    engine = _Sessions()
    pool = SessionPool(engine, 2, max_depth=400)
    with anyio.fail_after(10):
        for number in range(PENDING_TURNS + 3):
            async with pool.attach("a"):
                pool.defer("a", Turn(f"turn {number}", "{}"))
        await pool.settle("a")
    assert engine.turns == [f"turn {n}" for n in range(3, PENDING_TURNS + 3)]


@pytest.mark.parametrize(
    ("request_text", "values_only"),
    [
        ("and in Tokyo again?", True),
        ("the same for Berlin", True),
        ("what about tomorrow?", True),
        ("now ~/notes/b.txt", True),
        ("same for PROJ-12", True),
        ("What is the current weather in Paris again?", False),  # says its task itself
        ("delete that file", False),
        ("what about the weekly forecast", False),
        ("what time is it in Paris?", False),  # no follow-up at all
    ],
)
def test_a_follow_up_gives_only_new_values_when_it_says_no_more_than_one_word_of_its_own(
    request_text: str, values_only: bool
):
    assert only_new_values(request_text) is values_only
