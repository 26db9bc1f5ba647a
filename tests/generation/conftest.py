"""One real engine (the default Qwen2.5-Coder-0.5B, a small context) for the generation tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nexus_gateway.engine.runtime import Runtime
from tests.engine.conftest import settings


@pytest.fixture(scope="session")
def gen_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    engine = Runtime.load(settings(sessions=2), compiled_root=tmp_path_factory.mktemp("compiled_schemas"))
    yield engine
    engine.close()
