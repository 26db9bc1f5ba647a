"""Session history of a given depth, as a real session holds it: whole earlier turns, never a cut one.

A client session grows by one `Turn` per call (`Runtime.append_turn`: the layout's turn text, tokenized
on its own). Evaluations and benchmarks that measure "at depth N" build the same thing: whole turns,
repeated in order until there are at least N tokens. A history cut at exactly N tokens would end inside a
turn (often inside a JSON string, `"https://`), and the tool text and request decoded after it would read
as the rest of that turn, which no real session does.

`GENERIC_TURNS` are earlier exchanges with tools of no benchmark or evaluation set (weather, files, git,
mail, ...): history that shows the model nothing about the cases measured after it.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_gateway.engine import Turn
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import ConfigError

GENERIC_TURNS: tuple[Turn, ...] = (
    Turn("What's the weather in Lisbon tomorrow?", '{"city": "Lisbon", "day": "tomorrow"}', "Sunny, 24 C"),
    Turn("Show me the last 5 commits", '{"max_count": 5}', "a41c2e0 Fix the login redirect; 9be77f1 Bump version"),
    Turn("Read /etc/hostname", '{"path": "/etc/hostname"}', "build-server-02"),
    Turn(
        "Send a note to dana@example.org saying the review moved to Friday",
        '{"to": "dana@example.org", "subject": "Review moved", "body": "The review moved to Friday."}',
        "Message queued",
    ),
    Turn("What time is it in Nairobi?", '{"timezone": "Africa/Nairobi"}', '{"datetime": "2026-03-14T03:26:53+03:00"}'),
    Turn("Convert 120 US dollars to euros", '{"amount": 120, "from": "USD", "to": "EUR"}', "110.52 EUR"),
    Turn(
        "List the files in ~/projects/site/src",
        '{"path": "~/projects/site/src"}',
        "index.html, main.js, style.css",
    ),
    Turn("Create an issue titled 'Crash on empty input'", '{"title": "Crash on empty input"}', "Created issue #214"),
    Turn("How far is it from Berlin to Prague by car?", '{"origin": "Berlin", "destination": "Prague"}', "350 km"),
    Turn("Remind me to call the dentist at 4pm", '{"text": "call the dentist", "time": "16:00"}', "Reminder set"),
)


def history_tokens(runtime: Runtime, turns: Sequence[Turn], depth: int) -> list[int]:
    """Whole turns in `runtime`'s prompt layout, each tokenized on its own as `Runtime.append_turn` does,
    repeated in order until there are at least `depth` tokens (none for depth 0). The tokens run past
    `depth` by less than one turn; `len` of the result is the depth actually measured."""
    if depth <= 0:
        return []
    encoded = [runtime.model.tokenize(runtime.layout.turn_text(turn), special=True) for turn in turns]
    if not any(encoded):
        raise ConfigError("no history text to build session depth from")
    tokens: list[int] = []
    while len(tokens) < depth:
        for turn in encoded:
            tokens += turn
            if len(tokens) >= depth:
                break
    return tokens
