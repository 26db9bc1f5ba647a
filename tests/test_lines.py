"""Newline framing of an upstream's stdout: linear, capped, and able to name an oversized response."""

import time

from nexus_gateway._lines import LineFramer, Oversized


def test_lines_split_across_chunks_come_out_whole_and_blank_lines_are_dropped():
    framer = LineFramer(1024)
    assert framer.feed(b'{"a":1}\n\n{"b"') == [b'{"a":1}']
    assert framer.feed(b":2") == []
    assert framer.feed(b'}\n{"c":3}\n') == [b'{"b":2}', b'{"c":3}']


def test_a_long_line_is_framed_in_time_linear_in_its_size():
    # 96 MB in 64 KiB chunks. Linear framing copies each byte about twice (well under 0.5 s of CPU);
    # re-joining the buffer on every chunk, as the SDK's stdio client does, copies 77 GB (tens of
    # seconds). The bound sits 20x above the first and far below the second, so load cannot flip it.
    framer = LineFramer(1 << 30)
    chunk = b"x" * 65536
    started = time.process_time()  # CPU time: other jobs on a shared machine do not count
    for _ in range(96 * 16):
        assert framer.feed(chunk) == []
    (line,) = framer.feed(b"\n")
    spent = time.process_time() - started
    assert isinstance(line, bytearray) and len(line) == 96 * 16 * 65536
    assert spent < 4.0, f"framing a 96 MB line took {spent:.1f}s of CPU: not linear"


def test_a_line_over_the_cap_is_dropped_and_the_next_line_is_kept():
    framer = LineFramer(1000)
    first, rest = b'{"jsonrpc":"2.0","id":7,"result":{"text":"' + b"y" * 5000, b"y" * 5000 + b'"}}'
    assert framer.feed(first) == []
    (oversized, after) = framer.feed(rest + b'\n{"jsonrpc":"2.0","id":8,"result":{}}\n')
    assert isinstance(oversized, Oversized) and oversized.size == len(first + rest)
    assert oversized.response_id() == 7
    assert after == b'{"jsonrpc":"2.0","id":8,"result":{}}'


def test_an_oversized_response_with_its_id_last_is_still_named():
    framer = LineFramer(1000)
    (oversized,) = framer.feed(
        b'{"result":{"content":[{"id":1,"text":"' + b"z" * 9000 + b'"}]},"jsonrpc":"2.0","id":"r-9"}\n'
    )
    assert isinstance(oversized, Oversized) and oversized.response_id() == "r-9"


def test_an_oversized_request_or_notification_names_no_response():
    framer = LineFramer(1000)
    lines = framer.feed(b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":"' + b"q" * 2000 + b'"}\n')
    lines += framer.feed(
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":4,"x":"' + b"q" * 2000 + b'"}}\n'
    )
    assert [line.response_id() for line in lines if isinstance(line, Oversized)] == [None, None]
