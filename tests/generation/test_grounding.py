"""Grounding (does the request fill the required arguments?) and the time-zone value domain. No model."""

import zoneinfo

from nexus_gateway.generation.domains import named_zones, time_zones, with_domains, zones_as_stated
from nexus_gateway.generation.grammar import grammar_for
from nexus_gateway.generation.grounding import (
    as_written,
    grounding,
    ignores_request,
    invented_optional,
    salient_values,
    stated_values,
    ungrounded,
    unused_values,
    without_nested_inventions,
)

ZONE_SPEC = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York')"}
CURRENT = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York')"}},
    "required": ["timezone"],
}
CONVERT = {
    "type": "object",
    "properties": {
        "source_timezone": {"type": "string"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "target_timezone": {"type": "string"},
        "verbose": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["source_timezone", "time", "target_timezone"],
}


def test_a_value_taken_from_the_request_is_supported_and_an_invented_one_is_not():
    request = "what time is it in Tokyo?"
    assert grounding(request, CURRENT, {"timezone": "Asia/Tokyo"}).invented == 0
    convert = grounding(request, CONVERT, {"source_timezone": "UTC", "time": "15:00", "target_timezone": "Asia/Tokyo"})
    assert (convert.supported, convert.free, convert.invented) == (1, 3, 2)


def test_a_name_the_request_gives_in_pieces_is_supported_and_other_compositions_are_not():
    schema = {
        "type": "object",
        "properties": {"recipient_account_name": {"type": "string"}, "memo": {"type": "string"}},
        "required": ["recipient_account_name"],
    }
    request = "Move $850 to my landlord. Her first name is Deborah and her last name is Okafor."
    assert ungrounded(request, schema, {"recipient_account_name": "Deborah Okafor"}) == []
    assert ungrounded(request, schema, {"recipient_account_name": "Deborah Smith"}) == ["recipient_account_name"]
    assert ungrounded(request, schema, {"recipient_account_name": "deborah okafor"}) == ["recipient_account_name"]
    # a parameter that is no name: words of the request put together are no value it gives
    assert ungrounded(request, schema, {"recipient_account_name": "Deborah Okafor", "memo": "Okafor Move"}) == ["memo"]


def test_optional_arguments_enum_choices_and_booleans_are_not_counted():
    schema = {**CONVERT, "properties": {**CONVERT["properties"], "unit": {"enum": ["a", "b"]}}, "required": ["unit"]}
    assert grounding("convert it", schema, {"unit": "a", "note": "made up", "verbose": True}).free == 0
    assert grounding("anything", CONVERT, {}).invented == 0


def test_numbers_must_appear_as_written_and_stop_words_do_not_count():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
        "required": ["n", "s"],
    }
    assert grounding("book 12 seats for the show", schema, {"n": 12, "s": "the show"}).invented == 0
    assert grounding("book 112 seats for the show", schema, {"n": 12, "s": "the movie"}).invented == 2


def test_time_zone_parameters_become_an_enum_of_real_zones_for_decoding_only():
    zones = time_zones()
    assert "Asia/Tokyo" in zones and "Etc/UTC" in zones and "Japan" not in zones
    assert all(zoneinfo.ZoneInfo(zone) for zone in zones[:20])
    decoded = with_domains(CONVERT)
    assert decoded["properties"]["source_timezone"]["enum"] == list(zones)
    assert "enum" not in decoded["properties"]["time"] and "enum" not in decoded["properties"]["note"]
    assert "enum" not in CONVERT["properties"]["source_timezone"]  # the tool's own schema is untouched
    assert "Asia/Tokyo" in grammar_for(CURRENT).gbnf


ZONED = {
    "type": "object",
    "properties": {
        "source_timezone": {"type": "string", "description": "IANA timezone of the given time"},
        "time": {"type": "string"},
        "target_timezone": {"type": "string", "description": "IANA timezone to convert to"},
    },
}


def test_a_zone_the_request_never_names_gives_way_to_the_one_it_names_that_no_other_argument_holds():
    decoded = {"source_timezone": "America/New_York", "time": "09:15", "target_timezone": "Australia/Sydney"}
    fixed = zones_as_stated("Convert 9:15 Berlin time to Sydney time", ZONED, decoded)
    assert fixed == {**decoded, "source_timezone": "Europe/Berlin"}
    assert zones_as_stated("what time is it in paris?", CURRENT, {"timezone": "Europe/London"}) == {
        "timezone": "Europe/Paris"
    }
    boston = zones_as_stated("what time is it in Boston?", CURRENT, {"timezone": "Europe/London"})
    assert boston == {"timezone": "America/New_York"}  # a city whose zone is named for another


def test_a_zone_the_request_names_or_a_choice_it_does_not_make_is_kept():
    assert zones_as_stated("time in Tokyo?", CURRENT, {"timezone": "Asia/Tokyo"}) == {"timezone": "Asia/Tokyo"}
    both_wrong = {"source_timezone": "UTC", "time": "9:15", "target_timezone": "UTC"}
    assert zones_as_stated("9:15 Berlin time in Sydney", ZONED, both_wrong) == both_wrong  # which is which?
    assert zones_as_stated("what time is it?", CURRENT, {"timezone": "Etc/UTC"}) == {"timezone": "Etc/UTC"}
    assert named_zones("Wake up, the Nice team calls at 9") == ["Pacific/Wake", "Europe/Paris"]
    assert named_zones("The center of Town, nice") == []  # mixed case: a place only with a capital


def test_a_string_with_its_own_constraint_or_asking_for_an_offset_is_left_alone():
    schema = {"type": "object", "properties": {"timezone": {"type": "string", "pattern": "^[A-Z]+$"}}}
    assert with_domains(schema) is schema
    offset = {
        "type": "object",
        "properties": {"tz": {"type": "string", "description": "Time zone offset, e.g. +09:00"}},
    }
    assert with_domains(offset) is offset


def test_optional_arguments_the_request_never_gave_are_the_ones_dropped():
    request = "convert 15:00 from London to Tokyo, add a note: lunch"
    arguments = {
        "source_timezone": "Europe/London",
        "time": "15:00",
        "target_timezone": "Asia/Tokyo",
        "note": "lunch",
        "verbose": True,
    }
    assert invented_optional(request, CONVERT, arguments) == []
    assert invented_optional(request, CONVERT, {**arguments, "note": "2023-01-01T10:00:00Z"}) == ["note"]
    assert invented_optional("convert it", CONVERT, {"time": "12:00"}) == []  # required ones are never dropped
    padded = {**arguments, "note": "This is a note with a list of items to be purchased"}  # one word of four
    assert invented_optional("create a note titled lunch", CONVERT, padded) == ["note"]


def test_an_optional_argument_left_empty_is_dropped_and_a_required_one_is_not():
    arguments = {"source_timezone": "", "time": "15:00", "target_timezone": "Asia/Tokyo", "note": ""}
    assert invented_optional("convert 15:00 to Tokyo", CONVERT, arguments) == ["note"]


READ = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "encoding": {"type": "string"}},
    "required": ["path"],
}


def test_a_path_is_from_the_request_only_as_written_with_its_leading_slash():
    request = "read the file /work/notes/todo.txt please"
    assert grounding(request, READ, {"path": "/work/notes/todo.txt"}).invented == 0
    assert grounding(request, READ, {"path": "work/notes/todo.txt"}).invented == 1  # leading / dropped
    assert grounding(request, READ, {"path": "/work/notes/todo"}).invented == 1  # extension cut off
    assert grounding("read /work/work.txt", READ, {"path": "work/work.tmp"}).invented == 1  # words alone are not a span
    assert grounding("Read /tmp/a.txt.", READ, {"path": "/tmp/a.txt"}).invented == 0  # a sentence's full stop


def test_words_of_a_value_scattered_in_the_request_do_not_make_it_supported():
    request = "book a table at the construction site cafe"
    place = {"type": "object", "properties": {"place": {"type": "string"}}, "required": ["place"]}
    assert grounding(request, place, {"place": "construction site"}).invented == 0
    assert grounding(request, place, {"place": "site construction"}).invented == 1
    assert grounding(request, place, {"place": "cafe table"}).invented == 1


def test_ungrounded_names_every_argument_whose_value_the_request_lacks():
    request = "read /etc/hosts as latin-1"
    assert ungrounded(request, READ, {"path": "/etc/hosts", "encoding": "latin-1"}) == []
    assert ungrounded(request, READ, {"path": "etc/hosts", "encoding": "utf-8"}) == ["path", "encoding"]


def test_a_time_zone_is_supported_by_the_place_the_request_names():
    assert grounding("time in New York?", CURRENT, {"timezone": "America/New_York"}).invented == 0
    assert grounding("what time is it?", CURRENT, {"timezone": "Etc/UTC"}).invented == 1
    assert grounding("what time is it in UTC?", CURRENT, {"timezone": "Etc/UTC"}).invented == 0


def test_a_number_is_from_the_request_with_all_its_digits():
    schema = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    request = "assess a revenue of 0.6863965658665878 and 12 staff"
    assert grounding(request, schema, {"x": 0.6863965658665878}).invented == 0
    assert grounding(request, schema, {"x": 12.0}).invented == 0
    assert grounding(request, schema, {"x": 0.686397}).invented == 1  # a prefix of the digits is not the number
    assert grounding("a slope of 34.2 degrees", schema, {"x": 34}).invented == 1
    cells = "dedupe the rows in A1:F500 of ENG-88 and the p99 over 2h"
    assert [grounding(cells, schema, {"x": x}).invented for x in (1, 500, 88, 99, 2)] == [1, 1, 0, 0, 0]


DISEASE = {
    "type": "object",
    "properties": {
        "disease_name": {"type": "string"},
        "species": {"type": "string"},
        "region": {"type": "string", "enum": ["Europe", "Asia"]},
    },
    "required": ["disease_name"],
}


def test_a_value_is_written_as_the_request_writes_it_its_case_and_its_plural():
    request = "Provide information about avian influenza in cats in Asia."
    written = as_written(request, DISEASE, {"disease_name": "Avian Influenza", "species": "cat", "region": "Asia"})
    assert written == {"disease_name": "avian influenza", "species": "cats", "region": "Asia"}
    assert invented_optional(request, DISEASE, written) == []


def test_a_value_the_request_holds_in_no_spelling_is_left_as_it_is():
    request = "Provide information about rabies in dogs."
    arguments = {"disease_name": "rabies", "species": "canine", "region": "Europe"}
    assert as_written(request, DISEASE, arguments) == arguments
    glued = as_written("rabies in dogsled teams", DISEASE, {"disease_name": "rabies", "species": "dog"})
    assert glued["species"] == "dog"


def test_a_value_in_the_request_but_not_of_the_shape_its_parameter_asks_for_is_not_supported():
    schema = {
        "type": "object",
        "properties": {
            "user_google_email": {"type": "string"},
            "site": {"type": "string", "format": "uri"},
            "link_id": {"type": "string"},  # a name that only mentions links asks for no shape
            "sessionId": {"type": "string"},
        },
        "required": ["user_google_email", "site", "link_id", "sessionId"],
    }
    request = "merge PR 57 on octo/app for sam@acme.io at acme.dev"
    shaped = {"user_google_email": "sam@acme.io", "site": "acme.dev", "link_id": "57", "sessionId": "octo/app"}
    assert grounding(request, schema, shaped).invented == 0
    wrong = {"user_google_email": "octo/app", "site": "octo/app", "link_id": "57", "sessionId": "PR 57"}
    assert grounding("describe payments in staging", READ, {"path": "staging"}).invented == 1  # a word, not a path
    assert grounding(request, schema, wrong).invented == 3  # an identifier has no spaces
    assert ungrounded(request, schema, wrong) == ["user_google_email", "site", "sessionId"]


def test_a_required_value_left_empty_counts_as_one_the_request_did_not_give():
    schema = {
        "type": "object",
        "properties": {"filename": {"type": "string"}, "image_path": {"type": "string"}, "caption": {"type": "string"}},
        "required": ["filename", "image_path"],
    }
    request = "show me this picture /home/sam/Pictures/cat.png"
    filled = grounding(request, schema, {"filename": "/home/sam/Pictures/cat.png", "image_path": "", "caption": ""})
    assert (filled.supported, filled.invented) == (1, 1)


def test_an_identifier_in_the_request_is_salient_and_a_tool_that_takes_none_of_it_ignores_the_request():
    request = "what's been said recently in #general (C01ABCD)"
    assert salient_values(request) == ["C01ABCD"]
    assert ignores_request(request, {}) == ["C01ABCD"]
    assert ignores_request(request, {"channel_id": "C01ABCD"}) == []
    assert salient_values("email bob@example.com about PROJ-88 at https://x.io/a1b2") == [
        "https://x.io/a1b2",
        "bob@example.com",
        "PROJ-88",
    ]
    assert salient_values("python 3.13 release notes for Q4") == []  # no letters and digits in one token of 4+


def test_an_owner_and_name_slug_is_salient_and_used_whole_or_by_its_parts():
    request = "close issue 34 in octo/app"
    assert salient_values(request) == ["octo/app"]
    assert ignores_request(request, {}) == ["octo/app"]  # a tool without parameters takes nothing of it
    assert ignores_request(request, {"owner": "octo", "repo": "app", "issue_number": 34}) == []
    assert ignores_request("fork vercel/next.js", {"repository": "vercel/next.js"}) == []
    assert salient_values("read /home/sam/a/b.txt") == ["/home/sam/a/b.txt"]  # a path is no slug


def test_a_quoted_span_and_a_long_number_are_salient_and_short_numbers_and_apostrophes_are_not():
    request = "kick off `npm run build` in a terminal and tell me what it spits out"
    assert salient_values(request) == ["npm run build"]
    assert ignores_request(request, {"params": {"outputDir": "build"}}) == ["npm run build"]
    assert ignores_request(request, {"command": "npm run build"}) == []
    assert salient_values("leave a comment 'looks good to me' on it") == ["looks good to me"]
    assert salient_values('send "standup in 5" to the team space') == ["standup in 5"]
    assert salient_values("bibtex for 1706.03762 please") == ["1706.03762"]
    assert ignores_request("kill pid 48213", {}) == ["48213"]
    assert ignores_request("kill pid 48213", {"pid": 48213}) == []
    assert salient_values("what's staged in my sister's repo") == []  # apostrophes open no quote
    assert salient_values("show the last 5 commits, 10,000 rows, version 3.5") == []  # counts and short numbers


def test_stated_values_count_what_the_request_spells_required_or_optional_and_never_booleans():
    request = "Show the last 2 commits of the git repository /srv/app"
    assert stated_values(request, {"repo_path": "/srv/app", "max_count": 2}) == 2
    assert stated_values(request, {"repo_path": "/srv/app", "revision": "HEAD~2", "verbose": True}) == 1
    assert stated_values("tag it a, b", {"tags": ["a", "b", "c"], "note": ""}) == 2


def test_the_sides_of_a_slug_and_a_time_written_without_its_leading_zero_are_what_the_request_says():
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "time": {"type": "string"}},
        "required": ["owner", "repo", "time"],
    }
    request = "if it's 9:30 in octo/app, remind me"
    assert ungrounded(request, schema, {"owner": "octo", "repo": "app", "time": "09:30"}) == []
    assert ungrounded(request, schema, {"owner": "oct", "repo": "app/x", "time": "10:30"}) == ["owner", "repo", "time"]


def test_a_time_said_on_the_twelve_hour_clock_is_the_requests_own():
    schema = {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]}
    for request, time in [("if it's 3pm in New York", "15:00"), ("at 9:30 a.m.", "09:30"), ("noon is 12 PM", "12:00")]:
        assert ungrounded(request, schema, {"time": time}) == [], request
    assert ungrounded("if it's 3pm in New York", schema, {"time": "03:00"}) == ["time"]
    assert ungrounded("midnight, 12am", schema, {"time": "12:00"}) == ["time"]


def test_an_identifier_copied_with_a_slip_is_written_as_the_request_writes_it():
    schema = {"type": "object", "properties": {"channel_id": {"type": "string"}, "timestamp": {"type": "string"}}}
    request = "react with thumbsup to message 1712345678.000200 in channel C1234567"
    decoded = {"channel_id": "C12345678", "timestamp": "1712345678.000200"}
    assert as_written(request, schema, decoded) == {**decoded, "channel_id": "C1234567"}
    two = "move PROJ-88 and PROJ-87 to Done"
    assert as_written(two, schema, {"channel_id": "PROJ-89"}) == {"channel_id": "PROJ-89"}  # which one?
    assert as_written("channel C1234567", schema, {"channel_id": "C7654321"}) == {"channel_id": "C7654321"}
    cut = "search our AWS knowledge base KB7QX2LM9P for the parental leave policy"
    assert as_written(cut, schema, {"channel_id": "7QX2LM9P"}) == {"channel_id": "KB7QX2LM9P"}
    assert as_written("order ORD-2024-118842", schema, {"channel_id": "118842"}) == {"channel_id": "118842"}
    thread = 'reply "done" in the thread 1733412345.004200 in channel C04KZ9T2Q1L'
    assert as_written(thread, schema, {"timestamp": "1233412345.004200"}) == {"timestamp": "1733412345.004200"}
    assert as_written("call 555-0100", schema, {"timestamp": "555-0199"}) == {"timestamp": "555-0199"}  # too short


def test_a_value_that_adds_words_of_its_own_to_a_span_the_request_quotes_is_that_span():
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}
    quoted = "Add 'Dentist' to my calendar on 2024-07-09 at 15:30"
    assert as_written(quoted, schema, {"title": "Dentist Appointment"}) == {"title": "Dentist"}
    said = 'email bob saying "running late" and that I will be there at 5'
    composed = {"body": "running late, I will be there at 5"}  # the other words are the request's: kept
    assert as_written(said, schema, composed) == composed
    assert as_written("Add Dentist to my calendar", schema, {"title": "Dentist Appointment"}) == {
        "title": "Dentist Appointment"  # nothing quoted: nothing to go by
    }


BOOKING = {
    "type": "object",
    "properties": {
        "hotel": {"type": "string"},
        "guest": {
            "type": "object",
            "properties": {"full_name": {"type": "string"}, "email": {"type": "string"}, "loyalty": {"type": "string"}},
            "required": ["full_name"],
        },
        "extras": {"type": "array", "items": {"type": "object", "properties": {"item": {"type": "string"}}}},
        "billing": {"type": "object", "properties": {"company": {"type": "string"}}},
    },
    "required": ["hotel", "guest"],
}


def test_optional_members_of_nested_objects_the_request_never_gave_are_left_out():
    request = "book Hotel Drisco, guest name Marcus Lee, and add breakfast"
    arguments = {
        "hotel": "Hotel Drisco",
        "guest": {"full_name": "Marcus Lee", "email": "marcus@example.com", "loyalty": "1234"},
        "extras": [{"item": "breakfast"}, {"item": "spa"}],
        "billing": {"company": "Acme"},
    }
    assert without_nested_inventions(request, BOOKING, arguments) == {
        "hotel": "Hotel Drisco",
        "guest": {"full_name": "Marcus Lee"},
        "extras": [{"item": "breakfast"}],  # the spa was never asked for
    }
    # a required member is kept, said or not; so is a required argument left empty
    assert without_nested_inventions("book it", BOOKING, {"hotel": "X", "guest": {"full_name": "Ann"}}) == {
        "hotel": "X",
        "guest": {"full_name": "Ann"},
    }


def test_a_value_only_inside_a_quoted_message_another_argument_holds_is_not_said():
    schema = {
        "type": "object",
        "properties": {"channel_id": {"type": "string"}, "text": {"type": "string"}},
        "required": ["channel_id", "text"],
    }
    request = "post 'standup in 5' in our team channel"
    assert ungrounded(request, schema, {"channel_id": "5", "text": "standup in 5"}) == ["channel_id"]
    assert ungrounded("post 'standup in 5' to channel 5", schema, {"channel_id": "5", "text": "standup in 5"}) == []
    assert ungrounded(request, schema, {"channel_id": "5", "text": "standup"}) == []  # the message is not held


def test_the_requests_values_an_argument_set_leaves_out_are_named_when_it_uses_some():
    bibtex = "give me bibtex for 1706.03762 and 2005.14165"
    assert unused_values(bibtex, {"paperId": "1706.03762"}) == ["2005.14165"]
    assert unused_values(bibtex, {"ids": ["1706.03762", "2005.14165"]}) == []
    assert unused_values(bibtex, {}) == []  # none used: that is `ignores_request`'s
    shot = "screenshot the page as checkout-step2 at 1280x800"
    assert unused_values(shot, {"name": "checkout-step2", "width": 1280, "height": 800}) == []
    assert unused_values("close issue 34 in octo/app", {"owner": "octo", "repo": "app", "issue": 34}) == []
    docs = "context7: /vercel/next.js, how do middleware matchers work?"
    assert unused_values(docs, {"libraryId": "/vercel/next.js"}, ["npm-context7"]) == []
    assert ignores_request("what's in sales.xlsx, sheet Q1, cells A1:F30?", {"path": "sales.xlsx"}) == ["A1:F30"]


def test_slips_in_copying_are_mended_from_the_request():
    free = {"type": "object", "properties": {"query": {"type": "string"}, "file_path": {"type": "string"}}}
    sql = "run this on duckdb: SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"
    cut = "SELECT region, SUM(amount) AS total FROM sales GROUP BY regionORDER"
    assert as_written(sql, free, {"query": cut})["query"] == sql.split(": ", 1)[1]
    assert as_written(sql, free, {"query": "SELECT region"}) == {"query": "SELECT region"}  # a part, not cut short
    forward = {"type": "object", "properties": {"resourceType": {"type": "string"}, "resourceName": {"type": "string"}}}
    joined = {"resourceType": "service", "resourceName": "frontend-service"}
    assert as_written("forward 8080 to the frontend service", forward, joined)["resourceName"] == "frontend"
    assert as_written("restart the frontend-service pod", forward, joined)["resourceName"] == "frontend-service"
    where = "which tests cover parse_invoice in billing/parsers.py?"
    assert as_written(where, free, {"file_path": "/billing/parsers.py"}) == {"file_path": "billing/parsers.py"}


def test_a_whole_segment_of_a_urls_path_and_a_number_said_in_words_are_said():
    schema = {"type": "object", "properties": {"channel_id": {"type": "string"}, "count": {"type": "integer"}}}
    link = "answer https://acme.slack.com/archives/C02ABCD1234/p1764950400123456 with 'ok'"
    assert ungrounded(link, schema, {"channel_id": "C02ABCD1234"}) == []
    assert ungrounded(link, schema, {"channel_id": "C02ABCD"}) == ["channel_id"]
    assert ungrounded("insert two empty columns", schema, {"count": 2}) == []
    assert ungrounded("insert one of the columns", schema, {"count": 1}) == ["count"]


def test_a_segment_of_a_url_another_argument_passes_whole_is_not_a_value_of_its_own():
    schema = {"type": "object", "properties": {"channel_id": {"type": "string"}, "url": {"type": "string"}}}
    request = "answer https://acme.slack.com/archives/C02ABCD1234/p17 with ok"
    url = "https://acme.slack.com/archives/C02ABCD1234/p17"
    assert ungrounded(request, schema, {"channel_id": "C02ABCD1234"}) == []
    assert ungrounded(request, schema, {"channel_id": "C02ABCD1234", "url": url}) == ["channel_id"]
    nested = {"type": "object", "properties": {"params": {"type": "object", "properties": schema["properties"]}}}
    trimmed = without_nested_inventions(request, nested, {"params": {"channel_id": "C02ABCD1234", "url": url}})
    assert trimmed == {"params": {"url": url}}


def test_a_value_without_the_separators_every_example_of_its_description_has_does_not_fit():
    slug = {"type": "string", "description": 'The project slug (e.g., "gh/organization/project").'}
    paper = {"type": "string", "description": "A paper id such as `arxiv:1706.03762` or `pmid:40953549`."}
    schema = {"type": "object", "properties": {"projectSlug": slug, "paperId": paper, "timezone": ZONE_SPEC}}
    request = "log 2h on ENG-88 for gh/acme/api, see arxiv:1706.03762 and 2005.14165, in UTC"
    assert ungrounded(request, schema, {"projectSlug": "ENG-88"}) == ["projectSlug"]
    assert ungrounded(request, schema, {"projectSlug": "gh/acme/api"}) == []
    assert ungrounded(request, schema, {"paperId": "2005.14165"}) == ["paperId"]
    assert ungrounded(request, schema, {"paperId": "arxiv:1706.03762"}) == []
    assert ungrounded(request, schema, {"timezone": "UTC"}) == []  # a zone is read by its own rules


def test_examples_a_description_gives_of_the_tools_results_say_nothing_of_the_parameters_value():
    symbol = {
        "type": "string",
        "description": "name of the symbol to search for; results include\n"
        'file paths relative to the repo root (e.g., "src/main.py")',
    }
    schema = {"type": "object", "properties": {"symbol_name": symbol}}
    request = "where is calculate_invoice_total used across the repo?"
    assert ungrounded(request, schema, {"symbol_name": "calculate_invoice_total"}) == []


def test_a_url_copied_without_its_scheme_gets_it_back():
    schema = {"type": "object", "properties": {"connectionString": {"type": "string"}, "name": {"type": "string"}}}
    request = "connect to mongodb+srv://reporting@cluster0.ab12c.mongodb.net/analytics, call the connection reporting"
    cut = {"connectionString": "reporting@cluster0.ab12c.mongodb.net/analytics", "name": "reporting"}
    assert as_written(request, schema, cut) == {
        "connectionString": "mongodb+srv://reporting@cluster0.ab12c.mongodb.net/analytics",
        "name": "reporting",  # a word of the request, not the rest of a URL: as it is
    }
    fetched = {"connectionString": "example.com/a", "name": "x"}
    assert as_written("fetch https://example.com/a.", schema, fetched)["connectionString"] == "https://example.com/a"
    assert as_written("fetch https://example.com/a", schema, {"name": "example.com"}) == {"name": "example.com"}
