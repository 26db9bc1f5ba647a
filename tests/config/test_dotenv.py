from nexus_gateway.config._dotenv import parse_env_file


def test_env_files_are_read_as_vs_code_reads_them():
    text = (
        "# comment\r\n\nexport A=1\nB = two words # trailing comment\nC=\"line\\nbreak\"\nD='# not a comment'\n"
        "E: colon\nF=`back`\nG=$A\nnot a pair\n"
    )
    assert parse_env_file(text) == {
        "A": "1",
        "B": "two words",
        "C": "line\nbreak",
        "D": "# not a comment",
        "E": "colon",
        "F": "back",
        "G": "$A",
    }
