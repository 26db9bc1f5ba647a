"""Values rewritten in the form their parameter's description asks for (formats.py, codes.py). No model."""

from nexus_gateway.generation.domains import spoken_forms
from nexus_gateway.generation.formats import as_said, in_asked_form, quantity_echoes
from nexus_gateway.generation.generator import _grounded
from nexus_gateway.generation.grounding import ungrounded

PLACE = {"type": "string", "description": "The city, in the format 'City, ST'."}
COUNTRY_PLACE = {"type": "string", "description": "Where, as 'City, Country'."}
CURRENCY = {"type": "string", "description": "The three-letter ISO 4217 code of the currency."}
LANGUAGE = {"type": "string", "description": "The ISO 639-1 code of the language, e.g. 'fr' for French."}


def _schema(required: list[str] | None = None, **properties: dict) -> dict:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


def test_a_place_cut_before_the_comma_of_its_form_is_joined_to_the_requests_next_piece():
    schema = _schema(location=PLACE, where=COUNTRY_PLACE)
    request = "showtimes in Portland, OR on 2024-03-09 and then Madrid, Spain please"
    fixed = in_asked_form(request, schema, {"location": "Portland", "where": "Madrid"})
    assert fixed == {"location": "Portland, OR", "where": "Madrid, Spain"}


def test_a_place_without_a_comma_form_or_a_comma_after_it_is_left_as_it_is():
    schema = _schema(location={"type": "string", "description": "A city."}, city=PLACE)
    request = "weather in Denver, CO and in Boston"
    assert in_asked_form(request, schema, {"location": "Denver", "city": "Boston"}) == {
        "location": "Denver",
        "city": "Boston",
    }


def test_a_state_named_in_words_becomes_its_code_where_the_form_asks_for_one_and_is_still_said():
    schema = _schema(location=PLACE)
    request = "How hot is it in Austin, Texas, in celsius?"
    assert in_asked_form(request, schema, {"location": "Austin, Texas"}) == {"location": "Austin, TX"}
    assert in_asked_form(request, schema, {"location": "Austin"}) == {"location": "Austin, TX"}
    assert ungrounded(request, schema, {"location": "Austin, TX"}) == []
    assert in_asked_form("in Paris, France", _schema(location=COUNTRY_PLACE), {"location": "Paris, France"}) == {
        "location": "Paris, France"
    }


def test_currencies_and_languages_named_in_words_become_the_codes_asked_for_and_count_as_said():
    schema = _schema(base=CURRENCY, quote={"type": "string", "description": "Target currency code (e.g., EUR)"})
    request = "How many euros is one US dollar?"
    fixed = in_asked_form(request, schema, {"base": "US dollar", "quote": "euros"})
    assert fixed == {"base": "USD", "quote": "EUR"}
    assert ungrounded(request, schema, fixed) == []
    assert in_asked_form("say hi in German", _schema(lang=LANGUAGE), {"lang": "German"}) == {"lang": "de"}
    assert spoken_forms("lang", LANGUAGE, "Klingon") is None


def test_a_currency_without_a_code_in_its_description_is_not_rewritten():
    schema = _schema(note={"type": "string", "description": "A note about the payment."})
    assert in_asked_form("pay in euros", schema, {"note": "euros"}) == {"note": "euros"}


def test_clock_times_are_written_as_hh_mm_and_spaces_are_removed_where_the_description_says_so():
    schema = _schema(
        time={"type": "string", "description": "Alarm time in 24-hour 'HH:MM' format."},
        flight={"type": "string", "description": "Airline code and digits without spaces, e.g. 'UA857'."},
    )
    assert in_asked_form("x", schema, {"time": "6:45", "flight": "UA 857"}) == {"time": "06:45", "flight": "UA857"}
    assert in_asked_form("x", schema, {"time": "7pm", "flight": "LH1"})["time"] == "19:00"


def test_marks_the_description_says_a_value_is_written_without_are_taken_off_its_ends():
    schema = _schema(
        reaction={"type": "string", "description": "The name of the emoji reaction (without ::)"},
        channel={"type": "string", "description": "Channel name, without the #"},
        path={"type": "string", "description": "Path from the repository root, without the leading slash"},
        user={"type": "string", "description": "The user's e-mail"},
    )
    request = "on slack, stick a :white_check_mark: on src/app.py in #general for sam@acme.io"
    written = {"reaction": ":white_check_mark:", "channel": "#general", "path": "/src/app.py", "user": "sam@acme.io"}
    fixed = in_asked_form(request, schema, written)
    assert fixed == {"reaction": "white_check_mark", "channel": "general", "path": "src/app.py", "user": "sam@acme.io"}
    assert in_asked_form(request, schema, {"reaction": "::"})["reaction"] == "::"  # nothing would be left
    for said, value, bare in [
        ("Handle with no at sign", "@sam", "sam"),
        ("Handle, without the @ symbol", "@sam", "sam"),
        ("Route without slashes", "/users/", "users"),
        ("Emoji without colons", ":tada:", "tada"),
        ("Tag without the hash sign", "#ops", "ops"),
    ]:
        one = _schema(value={"type": "string", "description": said})
        assert in_asked_form("x", one, {"value": value}) == {"value": bare}, said
    assert not ungrounded(request, schema, fixed)


def test_a_clock_time_the_request_does_not_say_becomes_the_one_it_says():
    schema = _schema(
        time={"type": "string", "description": "Reservation time in 24-hour HH:MM format."},
        date={"type": "string", "description": "Date of the reservation, YYYY-MM-DD."},
    )
    request = "Book a table for 3 at Zuni Cafe on March 14th 2026 at 7:30 pm."
    assert in_asked_form(request, schema, {"time": "15:30", "date": "2026-03-14 19:30"}) == {
        "time": "19:30",
        "date": "2026-03-14",
    }
    evening = in_asked_form("set an alarm for 6:45 in the evening", schema, {"time": "06:45"})
    assert evening == {"time": "18:45"}
    assert in_asked_form("meet at 14:00 or 3pm", schema, {"time": "10:00"}) == {"time": "10:00"}  # which one?
    assert in_asked_form("lunch, no time given", schema, {"time": "12:00"}) == {"time": "12:00"}
    both = _schema(start={"type": "string", "description": "Start, HH:MM."}, end=schema["properties"]["time"])
    # the one time the request says is the start's: the end the model worked out stays
    assert in_asked_form("from 1pm for two hours", both, {"start": "13:00", "end": "15:00"}) == {
        "start": "13:00",
        "end": "15:00",
    }


def test_a_percentage_becomes_a_decimal_only_where_the_description_asks_and_the_request_says_percent():
    rate = {"type": "number", "description": "The annual interest rate as a decimal, e.g. 0.05 for 5%."}
    schema = _schema(rate=rate, years={"type": "integer"})
    assert in_asked_form("$5000 at 4% for 10 years", schema, {"rate": 4, "years": 10}) == {"rate": 0.04, "years": 10}
    assert in_asked_form("$5000 at 3.5% for 10 years", schema, {"rate": 3.5, "years": 10})["rate"] == 0.035
    assert in_asked_form("rate 4 for 10 years", schema, {"rate": 4, "years": 10})["rate"] == 4


def test_a_percentage_the_model_wrote_as_a_fraction_is_written_as_the_percentage_asked_for():
    rate = {"type": "number", "description": "Annual interest rate as a percentage, e.g. 6.5 for 6.5%."}
    schema = _schema(["rate"], rate=rate)
    assert in_asked_form("a loan at 6.25% over 30 years", schema, {"rate": 0.0625}) == {"rate": 6.25}
    assert in_asked_form("a loan at 6.25% over 30 years", schema, {"rate": 6.25}) == {"rate": 6.25}
    assert in_asked_form("a loan at 5% over 30 years", schema, {"rate": 0.0625}) == {"rate": 0.0625}  # not said


def test_the_requests_one_duration_is_written_in_the_unit_the_description_names():
    schema = _schema(["duration"], duration={"type": "integer", "description": "Duration in seconds."}, label={})
    assert as_said("Set a timer for 5 minutes", schema, {"duration": 30}) == {"duration": 300}
    assert as_said("Set a timer for 90 seconds", schema, {"duration": 90}) == {"duration": 90}
    both = "5 minutes then 30 seconds"
    assert as_said(both, schema, {"duration": 30}) == {"duration": 30}


def test_a_duration_said_in_words_is_written_in_the_unit_the_parameters_name_takes():
    schema = _schema(["timeout_ms", "duration_minutes", "term_months"])
    for name in ("timeout_ms", "duration_minutes", "term_months"):
        schema["properties"][name] = {"type": "integer"}
    assert as_said("give it up to 3 minutes", schema, {"timeout_ms": 3000}) == {"timeout_ms": 180000}
    assert as_said("block 2 and a half hours", schema, {"duration_minutes": 120}) == {"duration_minutes": 150}
    assert as_said("an hour and a half", schema, {"duration_minutes": 1}) == {"duration_minutes": 90}
    assert as_said("a mortgage over 30 years", schema, {"term_months": 30}) == {"term_months": 360}
    assert as_said("3 items please", schema, {"term_months": 3}) == {"term_months": 3}  # no duration said


def test_a_converted_duration_is_grounded_and_kept():
    schema = _schema([], timeout_ms={"type": "integer"}, command={"type": "string"})
    request = "run `make` and give it 2 minutes"
    arguments, dropped = _grounded(request, schema, {"command": "make", "timeout_ms": 2000})
    assert arguments == {"command": "make", "timeout_ms": 120000} and dropped == ()


def test_a_duration_is_written_compactly_where_the_description_gives_compact_examples_and_is_grounded():
    since = {"type": "string", "description": "Show logs since relative time (e.g. '5s', '2m', '3h')"}
    spent = {"type": "string", "description": "Time spent. Examples: '1h 30m' (1 hour and 30 minutes), '1d' (1 day)"}
    schema = _schema(["time_spent"], since=since, time_spent=spent, note={"type": "string"})
    assert as_said("log an hour and a half on OPS-1", schema, {"time_spent": "1.5 hours"}) == {"time_spent": "1h 30m"}
    assert as_said("logs of the past 90 minutes", schema, {"since": "90 minutes"}) == {"since": "1h30m"}
    assert as_said("logs of the past 2 days", schema, {"since": "2 days"}) == {"since": "2d"}
    arguments, dropped = _grounded("logs of the past 90 minutes", schema, {"since": "90m", "note": "1h"})
    assert arguments == {"since": "90m"} and dropped == ("note",)  # `note` asks for no duration: 1h is not said
    plain_text = _schema(note={"type": "string", "description": "Any note."})
    assert as_said("wait 5 minutes", plain_text, {"note": "5 minutes"}) == {"note": "5 minutes"}


def test_a_language_named_in_a_hyphenated_compound_is_said():
    schema = _schema(language=LANGUAGE)
    assert ungrounded("the 25 most popular German-language articles", schema, {"language": "de"}) == []
    assert ungrounded("the 25 most popular articles", schema, {"language": "de"}) == ["language"]


DATE = {"type": "string", "description": "Date of the event, YYYY-MM-DD."}


def test_a_date_the_request_writes_out_is_put_in_the_form_the_parameter_asks_for():
    us = {"type": "string", "description": "Check-in date in MM/DD/YYYY format."}
    schema = _schema([], date=DATE, check_in=us)
    request = "concerts on the 21st of November 2026, and check in 2026-06-05"
    fixed = as_said(request, schema, {"date": "2026-", "check_in": "2026-06-05"})
    assert fixed == {"date": "2026-11-21", "check_in": "06/05/2026"}
    one = _schema([], date=DATE)  # a half-written date, grounded once it is the one the request says
    request = "any concerts on the 21st of November 2026?"
    assert _grounded(request, one, {"date": "2026-"}) == ({"date": "2026-11-21"}, ())


def test_a_date_is_placed_at_the_end_of_the_range_the_request_puts_it():
    schema = _schema(
        ["query"], query={"type": "string"}, start_date={**DATE, "default": ""}, end_date={**DATE, "default": ""}
    )
    request = "any news on EU AI Act enforcement published since Jan 5th 2026?"
    arguments, _ = _grounded(request, schema, {"query": "EU AI Act enforcement published since Jan 5th 2026"})
    assert arguments == {"query": "EU AI Act enforcement", "start_date": "2026-01-05"}
    assert "end_date" in _grounded("news until Jan 5th 2026", schema, {"query": "news"})[0]
    two = "news between 2026-01-05 and 2026-02-01"  # two dates, neither placed: left to the model
    assert _grounded(two, schema, {"query": "news"})[0] == {"query": "news"}


def test_a_date_without_a_year_is_not_read():
    schema = _schema([], date=DATE)
    assert as_said("dinner on June 5th", schema, {"date": "2026-06-"}) == {"date": "2026-06-"}


def test_an_optional_string_that_only_repeats_a_quantity_another_argument_holds_is_left_out():
    schema = _schema(
        ["duration"], duration={"type": "integer", "description": "Duration in seconds."}, label={"type": "string"}
    )
    request = "Set a timer for 5 minutes"
    assert quantity_echoes(request, schema, {"duration": 300, "label": "5 minutes"}) == ["label"]
    assert quantity_echoes("timer for 5 minutes called tea", schema, {"duration": 300, "label": "tea"}) == []
    arguments, dropped = _grounded(request, schema, {"duration": 30, "label": "5 minutes"})
    assert (arguments, dropped) == ({"duration": 300}, ("label",))


def test_two_said_dates_go_to_the_ends_of_the_range_their_cues_or_their_order_say():
    day = {"type": "string", "description": "Use 'YYYY-MM-DD'."}
    schema = _schema(start_time=day, end_time=day)
    cued = "out of office from December 23, 2026 through January 2, 2027"
    assert as_said(cued, schema, {"start_time": "2026-", "end_time": "2027-"}) == {
        "start_time": "2026-12-23",
        "end_time": "2027-01-02",
    }
    plain_order = "between March 1, 2025 and June 30, 2025"
    fixed = as_said(plain_order, _schema(date_from=day, date_to=day), {"date_from": "2025-", "date_to": "2025-"})
    assert fixed == {"date_from": "2025-03-01", "date_to": "2025-06-30"}


def test_the_one_said_duration_fills_the_one_parameter_that_takes_a_span_of_time():
    schema = _schema(hours_back={"type": "integer"}, entity_id={"type": "string"})
    assert _grounded("the logbook for the past two days", schema, {}) == ({"hours_back": 48}, ())
    assert _grounded("the logbook for the past two days", schema, {"hours_back": 48}) == ({"hours_back": 48}, ())
    assert _grounded("the logbook for the kitchen", schema, {}) == ({}, ())


def test_a_uuid_a_url_carries_as_32_hex_digits_is_the_one_a_uuid_parameter_takes():
    schema = _schema(["page_id"], page_id={"type": "string", "format": "uuid"})
    request = "read https://www.notion.so/acme/Q1-Plan-8f3c2a9d4b7e4e21a6c05d9f1b2e3a47"
    garbled = {"page_id": "1b2e3a47-4e21-a6c0-5d9f-1b2e3a474e21"}
    assert _grounded(request, schema, garbled) == ({"page_id": "8f3c2a9d-4b7e-4e21-a6c0-5d9f1b2e3a47"}, ())
    assert ungrounded(request, schema, {"page_id": "8f3c2a9d-4b7e-4e21-a6c0-5d9f1b2e3a47"}) == []


def test_an_example_the_model_copied_becomes_the_requests_digits_written_as_the_example_is():
    spec = {
        "type": "string",
        "description": "The timestamp of the parent message in the format '1234567890.123456'.",
    }
    schema = {"type": "object", "properties": {"thread_ts": spec}}
    link = "answer this thread: https://acme.slack.com/archives/C02ABCD1234/p1764950400123456"
    assert in_asked_form(link, schema, {"thread_ts": "1234567890.123456"}) == {"thread_ts": "1764950400.123456"}
    said = "answer thread 1764950400.123456 in C02ABCD1234"
    assert in_asked_form(said, schema, {"thread_ts": "1234567890.123456"}) == {"thread_ts": "1764950400.123456"}
    # a value the model did not copy from the example, or a request without such digits, is left alone
    assert in_asked_form(link, schema, {"thread_ts": "1764950400.123456"}) == {"thread_ts": "1764950400.123456"}
    assert in_asked_form("reply in the thread", schema, {"thread_ts": "1234567890.123456"}) == {
        "thread_ts": "1234567890.123456"
    }
    two = "threads p1764950400123456 and p1764950499123456"
    assert in_asked_form(two, schema, {"thread_ts": "1234567890.123456"}) == {"thread_ts": "1234567890.123456"}


def test_a_column_named_by_its_letter_is_given_as_its_number_where_the_description_counts_from_one():
    spec = {"type": "integer", "description": "1-based row, or column number (A=1)."}
    schema = {"type": "object", "properties": {"start": spec}}
    request = "insert two empty columns before column D on the Summary sheet"
    assert in_asked_form(request, schema, {"start": 1}) == {"start": 4}
    assert in_asked_form("delete column AB", schema, {"start": 1}) == {"start": 28}
    assert in_asked_form("insert a row before row 7", schema, {"start": 7}) == {"start": 7}  # no column named
    plain = {"type": "object", "properties": {"start": {"type": "integer", "description": "Where to start."}}}
    assert in_asked_form(request, plain, {"start": 1}) == {"start": 1}


def test_a_season_the_request_spans_over_two_years_is_written_as_the_description_asks():
    schema = _schema(
        season={"type": "string", "description": "NBA season as YYYY-YY, e.g. 2023-24"},
        fiscal={"type": "string", "pattern": r"^\d{4}-\d{2}$", "description": "Fiscal year"},
        month={"type": "string", "pattern": r"^\d{4}-\d{2}$", "description": "Month"},
    )
    said = "points per game for the 2023 to 2024 season"
    assert in_asked_form(said, schema, {"season": "2023"}) == {"season": "2023-24"}
    assert in_asked_form("spend in fiscal 2025/2026", schema, {"fiscal": "2025"}) == {"fiscal": "2025-26"}
    assert in_asked_form("spend in 2025/2026", schema, {"month": "2025-20"}) == {"month": "2025-20"}  # not a season
    assert in_asked_form("from 2019 to 2023", schema, {"season": "2019"}) == {"season": "2019"}  # not consecutive
    assert in_asked_form("2021-22 or 2022-23", schema, {"season": "2021-22"}) == {"season": "2021-22"}  # two seasons


def test_a_span_of_times_with_one_am_or_pm_puts_both_in_that_half_of_the_day():
    from nexus_gateway.generation.formats import said_clock_times

    assert said_clock_times("am I free on Feb 11 2027 between 2 and 4 pm UTC?") == ["14:00", "16:00"]
    assert said_clock_times("block 9-11am tomorrow") == ["09:00", "11:00"]
    assert said_clock_times("from 11 to 1 pm") == ["11:00", "13:00"]  # 11 pm would come after 1 pm
    assert said_clock_times("at 14:00, then at 4pm") == ["14:00", "16:00"]  # in the order said
    assert said_clock_times("meet at 3pm or 9:30 am") == ["15:00", "09:30"]


def test_a_date_time_twelve_hours_off_the_time_the_request_says_is_moved_to_it():
    window = {"type": "string", "description": "Start of the window, RFC3339 (e.g. 2027-01-01T09:00:00Z)."}
    schema = _schema(time_min=window, time_max=window)
    request = "I'm ana@x.io. Am I free on Thursday, Feb 11 2027 between 2 and 4 pm UTC?"
    filled = {"time_min": "2027-02-11T02:00:00Z", "time_max": "2027-02-11T04:00:00Z"}
    assert in_asked_form(request, schema, filled) == {
        "time_min": "2027-02-11T14:00:00Z",
        "time_max": "2027-02-11T16:00:00Z",
    }
    kept = {"time_min": "2027-02-11T09:00:00Z", "time_max": "2027-02-11T14:00:00Z"}  # 9:00 is no slip of 14/16
    assert in_asked_form(request, schema, kept) == kept
    said = "book the room from 2am to 2pm on 2027-03-01"
    assert in_asked_form(said, schema, {"time_min": "2027-03-01T02:00", "time_max": "2027-03-01T14:00"}) == {
        "time_min": "2027-03-01T02:00",
        "time_max": "2027-03-01T14:00",
    }
