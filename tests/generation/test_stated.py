"""Choices checked against what the request states (stated.py). No model."""

from nexus_gateway.generation.stated import (
    composed_paths,
    day_lists,
    directed,
    free_text_optionals,
    full_names,
    named_choices,
    named_parameters,
    one_place,
    split_slugs,
    stated_choices,
    switched_on,
    topic_only,
    unstatable,
    unstated_choices,
    whole_lists,
)

THERMOSTAT = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "unit": {"type": "string", "enum": ["C", "F"], "default": "F"},
        "mode": {"type": "string", "enum": ["heat", "cool", "auto", "off"], "default": "auto"},
    },
    "required": ["temperature"],
}
ALARM = {
    "type": "object",
    "properties": {
        "time": {"type": "string"},
        "repeat": {"type": "array", "items": {"type": "string", "enum": ["Mon", "Tue", "Wed", "Sat", "Sun"]}},
    },
    "required": ["time"],
}
PLACES = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["Mexican", "Italian", "Thai", "dontcare"]},
        "show_type": {"type": "string", "enum": ["regular", "3d", "imax", "dontcare"], "default": "dontcare"},
        "has_seating_outdoors": {"type": "boolean", "default": False},
        "dry_run": {"type": "boolean", "default": False},
        "video": {"type": "boolean", "default": True},
    },
    "required": ["category"],
}


def test_a_one_letter_enum_value_is_stated_only_by_that_whole_word():
    assert unstated_choices("cool the house to 68", THERMOSTAT, {"temperature": 68, "unit": "C"}) == ["unit"]
    assert unstated_choices("set it to 20 C", THERMOSTAT, {"temperature": 20, "unit": "C"}) == []
    assert unstated_choices("cool the house to 68", THERMOSTAT, {"temperature": 68, "mode": "cool"}) == []


def test_a_unit_an_enum_abbreviates_is_stated_by_its_name():
    celsius = "set the thermostat to 21 degrees celsius"
    assert "unit" not in unstatable(celsius, THERMOSTAT)  # `C` is decoded: the request names it in words
    assert unstated_choices(celsius, THERMOSTAT, {"temperature": 21, "unit": "C"}) == []
    assert stated_choices(celsius, THERMOSTAT, {"temperature": 21, "unit": "F"})["unit"] == "C"
    assert "unit" in unstatable("set the thermostat to 21, cool mode", THERMOSTAT)  # `cool` is no unit


def test_a_list_of_choices_none_of_which_the_request_names_is_unstated():
    every_day = ["Mon", "Tue", "Wed", "Sat", "Sun"]
    assert unstated_choices("alarm at 07:00 called gym", ALARM, {"time": "07:00", "repeat": every_day}) == ["repeat"]
    assert unstated_choices("alarm at 07:00 on Sundays", ALARM, {"time": "07:00", "repeat": ["Sun"]}) == []


def test_the_one_enum_value_the_request_names_replaces_one_it_does_not():
    fixed = stated_choices("IMAX movies in San Diego", PLACES, {"category": "Thai", "show_type": "regular"})
    assert fixed["show_type"] == "imax"
    assert fixed["category"] == "Thai"  # nothing else named, and no "any": the model's choice stays


def test_a_choice_written_with_a_hyphen_inside_it_is_named():
    assert (
        stated_choices("an animated movie in 3-D", PLACES, {"category": "Thai", "show_type": "regular"})["show_type"]
        == "3d"
    )
    assert "show_type" in unstatable("a movie in 2-D", PLACES)  # "2d" is no choice of it


def test_a_required_choice_the_request_leaves_open_becomes_the_wildcard_only_when_it_says_any_will_do():
    assert stated_choices("Any restaurant in San Jose is fine", PLACES, {"category": "Italian"}) == {
        "category": "dontcare"
    }
    assert stated_choices("pasta places in San Jose", PLACES, {"category": "Italian"}) == {"category": "Italian"}


def test_a_boolean_whose_words_the_request_states_is_switched_on_and_off_after_a_negation():
    request = "Thai food in Berkeley with outdoor seating, no video, run it"
    arguments = {"category": "Thai", "has_seating_outdoors": False, "dry_run": False, "video": True}
    fixed = stated_choices(request, PLACES, arguments)
    assert fixed["has_seating_outdoors"] is True
    assert fixed["video"] is False
    assert fixed["dry_run"] is False  # "run" alone does not state `dry_run`


def test_a_word_is_not_stated_by_a_much_longer_word_it_only_begins():
    schema = {"type": "object", "properties": {"output": {"type": "string", "enum": ["json", "name"]}}}
    assert unstated_choices("list the pods in namespace payments", schema, {"output": "name"}) == ["output"]
    comedy = {"type": "object", "properties": {"genre": {"type": "string", "enum": ["Comedy", "Drama"]}}}
    assert unstated_choices("comedies in Austin", comedy, {"genre": "Comedy"}) == []


def test_a_query_loses_a_bound_or_a_time_range_another_argument_carries():
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    assert topic_only(schema, {"query": "wireless headphones under $100", "max_price": 100})["query"] == (
        "wireless headphones"
    )
    assert topic_only(schema, {"query": "EV sales from the past week", "time_range": "week"})["query"] == "EV sales"
    assert topic_only(schema, {"query": "phones under $100", "max_price": 50})["query"] == "phones under $100"


def test_a_path_that_is_the_requests_folder_alone_is_joined_to_the_one_file_it_names():
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}
    request = "In the folder /home/ana/projects create a file called plan.md containing 'Draft plan.'"
    fixed = composed_paths(request, schema, {"path": "/home/ana/projects", "content": "Draft plan."})
    assert fixed["path"] == "/home/ana/projects/plan.md"
    move = "move plan.md to /home/ana/projects"
    held = {"path": "/home/ana/projects", "content": "plan.md"}
    assert composed_paths(move, schema, held) == held  # the file is another argument's already


def test_a_file_moved_between_two_folders_is_joined_to_each():
    schema = {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    request = "move report.pdf from /home/ana/Downloads into /home/ana/Documents/taxes"
    folders = {"source": "/home/ana/Downloads", "destination": "/home/ana/Documents/taxes"}
    assert composed_paths(request, schema, folders) == {
        "source": "/home/ana/Downloads/report.pdf",
        "destination": "/home/ana/Documents/taxes/report.pdf",
    }
    every_pdf = "move the pdfs from /home/ana/Downloads into /home/ana/Documents/taxes"  # no one file named
    assert composed_paths(every_pdf, schema, folders) == folders


def test_a_file_written_in_the_same_folder_as_the_one_path_named_is_placed_there():
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "csv_path": {"type": "string"}}}
    arguments = {"path": "/home/ana/reports/q3.xlsx", "csv_path": "sales_q3.csv"}
    request = "export /home/ana/reports/q3.xlsx as sales_q3.csv in the same folder"
    assert composed_paths(request, schema, arguments)["csv_path"] == "/home/ana/reports/sales_q3.csv"
    unsaid = "export /home/ana/reports/q3.xlsx as sales_q3.csv"  # where it goes is not said: left as written
    assert composed_paths(unsaid, schema, arguments)["csv_path"] == "sales_q3.csv"


def test_a_file_renamed_stays_in_its_folder():
    schema = {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    arguments = {"source": "/Users/dana/Downloads/IMG_4411.jpg", "destination": "passport_scan.jpg"}
    request = "rename /Users/dana/Downloads/IMG_4411.jpg to passport_scan.jpg"
    assert composed_paths(request, schema, arguments)["destination"] == "/Users/dana/Downloads/passport_scan.jpg"
    moved = "move /Users/dana/Downloads/IMG_4411.jpg to passport_scan.jpg"  # where to is not said
    assert composed_paths(moved, schema, arguments) == arguments


def test_an_owner_name_slug_held_whole_is_split_between_owner_and_repository():
    schema = {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}}
    request = "create an issue in acme/api called Add dark mode"
    split = split_slugs(request, schema, {"owner": "acme/api", "repo": "Add dark mode"})
    assert split == {"owner": "acme", "repo": "api"}
    assert split_slugs(request, schema, {"owner": "acme", "repo": "api"}) == {"owner": "acme", "repo": "api"}
    branches = "open a PR from feature/search into main"  # no slug held whole: nothing to split
    assert split_slugs(branches, schema, {"owner": "feature", "repo": "Search"}) == {
        "owner": "feature",
        "repo": "Search",
    }
    two = "compare octo/app with octo/web"  # which one?
    assert split_slugs(two, schema, {"owner": "octo/app"}) == {"owner": "octo/app"}
    chart = {"type": "object", "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}}}
    assert split_slugs("install bitnami/redis", chart, {"name": "bitnami/redis"}) == {"name": "bitnami/redis"}


def test_a_file_parameter_holding_words_gets_the_one_file_the_request_names():
    schema = {
        "type": "object",
        "properties": {"filename": {"type": "string"}, "title": {"type": "string"}, "file_id": {"type": "string"}},
    }
    request = "create a Word document report.docx titled Quarterly Review"
    fixed = composed_paths(request, schema, {"filename": "Quarterly Review", "title": "Quarterly Review"})
    assert fixed == {"filename": "report.docx", "title": "Quarterly Review"}
    in_folder = composed_paths(request.replace("report.docx", "/tmp/q4/report.docx"), schema, {"filename": "Q4"})
    assert in_folder == {"filename": "/tmp/q4/report.docx"}
    untouched = [
        ("create a Word document titled Quarterly Review", {"filename": "Quarterly Review"}),  # it names no file
        ("merge a.docx and b.docx", {"filename": "merged"}),  # which one?
        ("share report.docx", {"file_id": "1AbC"}),  # an id is no file name
    ]
    for text, arguments in untouched:
        assert composed_paths(text, schema, arguments) == arguments


def test_one_value_put_into_two_arguments_stays_where_the_request_puts_it():
    pods = {
        "type": "object",
        "properties": {"resourceType": {"type": "string"}, "name": {"type": "string"}, "namespace": {"type": "string"}},
        "required": ["resourceType"],
    }
    decoded = {"resourceType": "pods", "name": "payments", "namespace": "payments"}
    assert one_place("list the pods in namespace payments", pods, decoded) == {
        "resourceType": "pods",
        "namespace": "payments",
    }
    event = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "attendees": {"type": "array", "items": {"type": "string"}},
            "notes": {"type": "string"},
        },
        "required": ["title"],
    }
    assert one_place("Add 'Dentist' to my calendar", event, {"title": "Dentist", "attendees": ["Dentist"]}) == {
        "title": "Dentist"
    }
    assert one_place("Add 'Dentist' to my calendar", event, {"title": "Dentist", "notes": "Dentist"}) == {
        "title": "Dentist"
    }
    recipes = {
        "type": "object",
        "properties": {"ingredients": {"type": "array", "items": {"type": "string"}}, "diet": {"type": "string"}},
        "required": ["ingredients"],
    }
    fixed = one_place("vegan recipes using tofu", recipes, {"ingredients": ["tofu", "vegan"], "diet": "vegan"})
    assert fixed == {"ingredients": ["tofu"], "diet": "vegan"}
    looped = {"ingredients": ["chicken", "rice", "Chicken", "rice", "rice", "rice"]}  # a model that does not stop
    assert one_place("recipes with chicken and rice", recipes, looped) == {"ingredients": ["chicken", "rice"]}


def test_values_the_request_gives_twice_or_that_are_not_free_text_are_kept():
    route = {
        "type": "object",
        "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
        "required": ["source", "destination"],
    }
    both = {"source": "Lyon", "destination": "Lyon"}
    assert one_place("a loop from Lyon back to Lyon", route, both) == both  # both required: not ours to choose
    sizes = {"type": "object", "properties": {"width": {"type": "string", "pattern": "^\\d+px$"}, "height": {}}}
    square = {"width": "100px", "height": "100px"}
    assert one_place("a 100px square", sizes, square) == square


def test_from_x_to_y_puts_x_in_the_source_and_y_in_the_destination():
    matrix = {
        "type": "object",
        "properties": {
            "origins": {"type": "array", "items": {"type": "string"}},
            "destinations": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string"},
        },
    }
    both = {"origins": ["Boston", "Portland"], "destinations": ["Portland", "Boston"], "mode": "driving"}
    request = "distance by car from Boston to Portland"
    assert directed(request, matrix, both) == {"origins": ["Boston"], "destinations": ["Portland"], "mode": "driving"}
    swapped = {"origins": ["Portland"], "destinations": ["Boston"]}
    assert directed(request, matrix, swapped) == {"origins": ["Boston"], "destinations": ["Portland"]}
    route = {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}}
    walk = "walking directions from the Louvre to the Eiffel Tower"
    assert directed(walk, route, {"start": "the Eiffel Tower", "end": "the Louvre"}) == {
        "start": "the Louvre",
        "end": "the Eiffel Tower",
    }


def test_without_from_x_to_y_or_with_other_values_the_arguments_are_kept():
    route = {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}}
    kept = {"start": "Lyon", "end": "Turin"}
    assert directed("Turin and Lyon: how far apart?", route, kept) == kept
    assert directed("from Lyon to Geneva", route, kept) == kept  # Geneva is no value here: not ours to move
    same = {"start": "Lyon", "end": "Lyon"}
    assert directed("trains from Lyon to Lyon", route, same) == same  # one place both ways: nothing to order


def test_the_optional_parameters_a_request_can_give_no_value_of_are_known_before_decoding():
    schema = {
        "type": "object",
        "properties": {
            "repo_path": {"type": "string"},
            "max_count": {"type": "integer"},
            "include_merges": {"type": "boolean"},
            "order": {"enum": ["newest", "oldest"]},
            "authors": {"type": "array", "items": {"enum": ["alice", "bob"]}},
            "notify": {"type": "string", "format": "email"},
            "start_timestamp": {"type": "string"},
            "kind": {"enum": ["dontcare", "cafe", "bar"]},
        },
        "required": ["repo_path", "order"],
    }
    assert unstatable("show the commits of /srv/app", schema) == [
        "max_count",
        "include_merges",
        "authors",
        "notify",
        "kind",
    ]  # a required enum, and a free string (it might be any words of the request), are always decoded
    stated = "show the last 2 commits of /srv/app by bob with merges, mail sam@example.com, any kind"
    assert unstatable(stated, schema) == []


def test_free_text_optionals_are_plain_strings_or_lists_of_them_with_no_format_enum_or_domain():
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "body": {"type": "string"},
            "labels": {"type": "array", "items": {"type": "string"}},
            "due": {"type": "string", "format": "date"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "timezone": {"type": "string", "description": "IANA timezone name, e.g. Europe/London"},
            "count": {"type": "integer"},
        },
        "required": ["title"],
    }
    assert free_text_optionals(schema) == ["body", "labels"]


def test_a_value_copied_on_into_another_arguments_value_loses_that_tail():
    schema = {
        "type": "object",
        "properties": {"filename": {"type": "string"}, "text": {"type": "string"}, "level": {"type": "integer"}},
        "required": ["filename", "text"],
    }
    decoded = {
        "filename": "/home/ana/docs/proposal.docx",
        "text": "Risks and Mitigations to /home/ana/docs/proposal.docx",
    }
    request = "add a heading Risks and Mitigations to /home/ana/docs/proposal.docx"
    assert one_place(request, schema, decoded) == {**decoded, "text": "Risks and Mitigations"}
    kept = {"filename": "notes.txt", "text": "add notes.txt"}  # no joining word: the value is as the model wrote it
    assert one_place("add notes.txt", schema, kept) == kept
    whole = {"filename": "a.docx", "text": "to a.docx"}  # nothing would be left
    assert one_place("write to a.docx", schema, whole) == whole


def test_days_named_as_a_set_are_the_days_in_the_enums_spelling():
    alarm = {
        "type": "object",
        "properties": {
            "time": {"type": "string"},
            "repeat": {
                "type": "array",
                "items": {"type": "string", "enum": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]},
            },
        },
    }
    assert day_lists("a 6:30 alarm on weekdays", alarm) == {"repeat": ["Mon", "Tue", "Wed", "Thu", "Fri"]}
    assert day_lists("wake me at 9 on weekends", alarm) == {"repeat": ["Sat", "Sun"]}
    assert len(day_lists("remind me daily at 8", alarm)["repeat"]) == 7
    assert day_lists("an alarm at 7 tomorrow", alarm) == {}


def test_a_list_of_choices_cut_short_gets_every_choice_the_request_names_in_its_order():
    schema = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "enum": ["English", "French", "German", "Spanish"]},
            "languages": {
                "type": "array",
                "items": {"type": "string", "enum": ["English", "French", "German", "Spanish"]},
            },
            "kinds": {"type": "array", "maxItems": 2, "items": {"type": "string", "enum": ["pull_request", "issue"]}},
        },
    }
    said = "translate it into German, Spanish and French"
    assert whole_lists(said, schema, {"languages": ["German"]}) == {"languages": ["German", "Spanish", "French"]}
    assert whole_lists(said, schema, {"languages": ["German", "Spanish", "French"]}) == {}  # whole already
    assert whole_lists(said, schema, {"languages": ["English"]}) == {}  # began with a choice the request never names
    from_english = "translate it from English into German and French"
    assert whole_lists(from_english, schema, {"source": "English", "languages": ["German"]}) == {
        "languages": ["German", "French"]  # English is the source's
    }
    assert whole_lists("issues and pull requests", schema, {"kinds": ["issue"]}) == {"kinds": ["issue", "pull_request"]}
    assert whole_lists(said, schema, {"languages": [{"name": "German"}]}) == {}  # not a list of choices: left as is


def test_an_optional_boolean_whose_words_the_request_states_is_switched_on_and_a_default_unstated_is_left_out():
    schema = {
        "type": "object",
        "properties": {
            "italic": {"type": "boolean"},
            "recursive": {"type": "boolean"},
            "literalSearch": {"type": "boolean", "default": False},
            "format": {"type": "string", "enum": ["plain", "html"], "default": "plain"},
        },
    }
    assert switched_on("add the line in italics", schema) == {"italic": True}
    assert switched_on("add the line, not in italics", schema) == {}
    assert switched_on("search the folder recursively", schema) == {"recursive": True}
    pods = {
        "type": "object",
        "properties": {"allNamespaces": {"type": "boolean"}, "notifications": {"type": "boolean"}},
    }
    assert switched_on("list the pods in namespace payments", pods) == {}  # "all" is not said
    assert switched_on("list the pods in all namespaces", pods) == {"allNamespaces": True}
    assert switched_on("turn off notifications", pods) == {}
    assert unstated_choices("search for TODO", schema, {"literalSearch": False, "format": "plain"}) == [
        "literalSearch",
        "format",
    ]
    assert unstated_choices("search for TODO as plain text", schema, {"format": "plain"}) == []


def test_an_optional_enum_one_of_whose_choices_the_request_names_gets_that_choice():
    schema = {
        "type": "object",
        "properties": {
            "state": {"type": "string", "enum": ["open", "closed"]},
            "scope": {"type": "string", "enum": ["all", "mine"]},
            "sort": {"type": "string", "enum": ["created", "updated", "comments"]},
        },
    }
    assert named_choices("close issue #1290 in grafana/dashboards", schema, {}) == {"state": "closed"}
    assert named_choices("close issue #1290", schema, {"state": "open"}) == {"state": "closed"}
    assert named_choices("keep issue #1290 open, close #1291", schema, {"state": "open"}) == {}  # open is stated
    assert named_choices("show all issues", schema, {}) == {}  # `all` says nothing
    assert named_choices("issues created or updated today", schema, {}) == {}  # two choices: not one


def test_a_persons_name_given_as_a_first_and_a_last_name_fills_a_full_name_parameter_whole():
    request = "Book it. Guest first name Priya, last name Raman, email priya@example.com"
    arguments = {"guest": {"full_name": "Priya", "email": "priya@example.com"}, "first_name": "Priya"}
    assert full_names(request, {}, arguments) == {
        "guest": {"full_name": "Priya Raman", "email": "priya@example.com"},
        "first_name": "Priya",  # a part of a name stays a part
    }
    assert full_names("send it to Priya", {}, {"recipient_name": "Priya"}) == {"recipient_name": "Priya"}


def test_parameters_are_named_when_their_value_follows_their_name():
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("to", "cc", "subject", "title", "labels")},
    }
    request = "draft to hr@x.com, cc tom@x.com, subject Sick day"
    assert named_parameters(request, schema) == ["to", "cc", "subject"]
    assert named_parameters("reply to the thread, the subject is fine", schema) == []
    assert named_parameters("add a slide titled Q3 Roadmap", schema) == ["title"]
    assert named_parameters("close it and label it wontfix", schema) == ["labels"]


def test_a_folder_named_inside_the_one_the_request_gives_is_joined_to_it():
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}}}
    request = "find all the .tf files in the infra folder of /home/ana/projects/platform"
    arguments = {"path": "/home/ana/projects/platform", "pattern": "*.tf"}
    assert composed_paths(request, schema, arguments) == {
        "path": "/home/ana/projects/platform/infra",
        "pattern": "*.tf",
    }
    same = "list the same folder of /home/ana"  # no folder's name
    assert composed_paths(same, schema, {"path": "/home/ana"}) == {"path": "/home/ana"}


def test_letter_case_said_in_words_sets_the_case_switches_either_way():
    from nexus_gateway.generation.stated import case_switches

    schema = {
        "type": "object",
        "properties": {
            "match_case": {"type": "boolean"},
            "ignoreCase": {"type": "boolean"},
            "caseSensitive": {"type": "boolean"},
            "case": {"type": "boolean"},  # says nothing of which way
            "whole_word": {"type": "boolean"},
        },
    }
    loose = {"match_case": False, "ignoreCase": True, "caseSensitive": False}
    said = "how often is 'force majeure' in msa.docx? upper or lower case doesn't matter"
    assert case_switches(said, schema) == loose
    assert case_switches("search case-insensitively for TODO", schema) == loose
    assert case_switches("find Foo, ignore case", schema) == loose
    strict = {"match_case": True, "ignoreCase": False, "caseSensitive": True}
    assert case_switches("find 'Foo' in notes.txt, case sensitive", schema) == strict
    assert case_switches("find foo in notes.txt", schema) == {}
    required = {**schema, "required": ["match_case"]}  # a required one is the model's to fill
    assert "match_case" not in case_switches("find foo, ignore case", required)


def test_a_list_copied_from_the_request_without_its_first_or_last_items_is_made_whole():
    from nexus_gateway.generation.stated import whole_enumerations

    schema = {"type": "object", "properties": {"options": {"type": "array", "items": {"type": "string"}}}}
    request = "create a dropdown helper called House Mode with options Home, Away, Night and Vacation"
    assert whole_enumerations(request, schema, {"options": ["Away", "Night", "Vacation"]}) == {
        "options": ["Home", "Away", "Night", "Vacation"]
    }
    cities = "weather for New York, Los Angeles and Chicago"
    assert whole_enumerations(cities, schema, {"options": ["New York", "Los Angeles"]}) == {
        "options": ["New York", "Los Angeles", "Chicago"]
    }
    assert whole_enumerations("label it bug, urgent and p1", schema, {"options": ["bug", "urgent"]}) == {
        "options": ["bug", "urgent", "p1"]
    }
    assert whole_enumerations("options Home, Away", schema, {"options": ["Home", "Away"]}) == {}  # whole already
    assert whole_enumerations("tag it red, then blue and green", schema, {"options": ["red", "green"]}) == {}
    capped = {"type": "object", "properties": {"options": {**schema["properties"]["options"], "maxItems": 2}}}
    assert whole_enumerations("label it bug, urgent and p1", capped, {"options": ["bug", "urgent"]}) == {}


def test_a_list_that_ends_with_and_is_whole_and_items_of_another_kind_are_not_of_it():
    from nexus_gateway.generation.stated import whole_enumerations

    schema = {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}}}}
    ended = "email ann@x.com and bob@y.com, subject: Lunch"
    assert whole_enumerations(ended, schema, {"to": ["ann@x.com", "bob@y.com"]}) == {}
    assert whole_enumerations("add labels bug and ui, then assign it", schema, {"to": ["bug", "ui"]}) == {}
    assert whole_enumerations("email Sam, ann@x.com and bob@y.com", schema, {"to": ["ann@x.com", "bob@y.com"]}) == {}
    invited = "invite ana@x.io, bob@y.io and cy@z.io"
    assert whole_enumerations(invited, schema, {"to": ["bob@y.io", "cy@z.io"]}) == {
        "to": ["ana@x.io", "bob@y.io", "cy@z.io"]
    }
