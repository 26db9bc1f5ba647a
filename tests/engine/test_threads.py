"""The thread governor: llama.cpp takes the cores other processes leave over, and a decode is the same with
any number of threads."""

from __future__ import annotations

import numpy as np

from nexus_gateway.engine.llama import ContextSettings, LlamaContext
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.threads import WINDOW_S, ThreadGovernor


class Readings:
    """A scripted machine: the clock, and the busy CPU seconds of the system and of this process."""

    def __init__(self) -> None:
        self.now, self.system, self.own = 0.0, 0.0, 0.0

    def advance(self, seconds: float, *, others: float, own: float = 0.0) -> None:
        """`seconds` pass; other processes keep `others` cores busy, this one `own`."""
        self.now += seconds
        self.own += own * seconds
        self.system += (others + own) * seconds

    def governor(self, ceiling: int, cores: int) -> ThreadGovernor:
        return ThreadGovernor(ceiling, cores, clock=lambda: self.now, system=lambda: self.system, own=lambda: self.own)


def test_the_engine_takes_the_cores_the_other_processes_leave_over():
    machine = Readings()
    governor = machine.governor(ceiling=2, cores=2)
    machine.advance(1.0, others=0.1, own=2.0)  # its own threads are not counted against it
    assert governor.threads() == 2
    machine.advance(1.0, others=0.8, own=1.2)
    assert governor.threads() == 1 and abs(governor.others - 0.8) < 1e-9
    machine.advance(WINDOW_S / 5, others=0.0)  # within the window: the last answer, no new reading
    assert governor.threads() == 1
    machine.advance(1.0, others=0.0)
    assert governor.threads() == 2
    machine.advance(1.0, others=3.0)  # more demand than cores: still one thread
    assert governor.threads() == 1


def test_the_ceiling_bounds_the_threads_on_a_quiet_large_machine():
    machine = Readings()
    governor = machine.governor(ceiling=8, cores=32)
    machine.advance(1.0, others=10.0)
    assert governor.threads() == 8
    machine.advance(1.0, others=30.0)
    assert governor.threads() == 2


def test_a_context_without_configured_threads_follows_the_governor_and_decodes_the_same(runtime: Runtime):
    machine = Readings()
    ctx = LlamaContext(runtime.model, ContextSettings(n_ctx=256, n_seq_max=4, threads=2))
    try:
        assert ctx.governor is None  # configured threads are taken as they are
    finally:
        ctx.close()
    ctx = LlamaContext(runtime.model, ContextSettings(n_ctx=256, n_seq_max=4, threads=None))
    try:
        assert ctx.governor is not None
        ctx.governor = machine.governor(ceiling=2, cores=2)
        tokens = runtime.model.tokenize("The weather in Paris is")
        machine.advance(1.0, others=0.0)
        quiet = ctx.decode(0, tokens, 0)
        assert ctx.threads == 2
        machine.advance(1.0, others=1.0)
        ctx.seq_rm(0)
        busy = ctx.decode(0, tokens, 0)
        assert ctx.threads == 1
        assert quiet is not None and busy is not None
        assert int(np.argmax(quiet)) == int(np.argmax(busy)) and np.allclose(quiet, busy, atol=1e-2)
    finally:
        ctx.close()
