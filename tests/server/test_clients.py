"""Which profile a connected client is served through, as the dashboard's clients page reads it."""

from nexus_gateway.server.clients import profile_of


class _Held:
    def __init__(self, state: dict) -> None:
        self.state = state


class _Request:
    def __init__(self, scope: dict, path_params: dict) -> None:
        self.scope, self.path_params = scope, path_params


def test_a_clients_profile_is_read_where_profiles_are_kept_or_is_a_dash():
    assert profile_of(_Held({}), None) == "-"  # type: ignore[arg-type]
    assert profile_of(_Held({"profile": "work"}), None) == "work"  # type: ignore[arg-type]
    assert profile_of(_Held({}), _Request({"profile": "ci"}, {})) == "ci"  # type: ignore[arg-type]
    assert profile_of(_Held({}), _Request({}, {"profile": "p1"})) == "p1"  # type: ignore[arg-type]
    assert profile_of(_Held({"profile": 3}), None) == "-"  # type: ignore[arg-type]
