"""The mention rule (okr.rules.mentions, issue 39): `@` and a person's full name as shown (spaces included, any
case, the longest name first) or their email; a name two people share is ambiguous and mentions nobody."""
from okr.rules.mentions import Piece, ambiguity_note, find, suggestions

SAM = ("u-sam", "Sam", "sam@example.com")
SAM_LEE = ("u-samlee", "Sam Lee", "sam.lee@example.com")
OTHER_SAM_LEE = ("u-samlee2", "Sam Lee", "slee@example.org")
ANA = ("u-ana", "Ana María Núñez", "ana@example.com")
PEOPLE = [SAM, SAM_LEE, ANA]


def test_a_full_name_with_spaces_is_one_mention_and_the_longest_name_wins():
    found = find("Thanks @Sam Lee, and @sam too.", PEOPLE)
    assert found.person_ids == ["u-samlee", "u-sam"]
    assert found.ambiguous == []
    assert found.pieces == [Piece("text", "Thanks ", None), Piece("person", "@Sam Lee", "u-samlee"),
                            Piece("text", ", and ", None), Piece("person", "@sam", "u-sam"),
                            Piece("text", " too.", None)]


def test_case_and_accents_match_and_the_text_is_kept_as_written():
    found = find("ping @ANA MARÍA NÚÑEZ!", PEOPLE)
    assert found.person_ids == ["u-ana"]
    assert found.pieces[1] == Piece("person", "@ANA MARÍA NÚÑEZ", "u-ana")


def test_a_name_must_end_at_a_word_boundary():
    found = find("@Samuel and @Sam_x and @Sam2", PEOPLE)
    assert found.person_ids == []
    assert found.pieces == [Piece("text", "@Samuel and @Sam_x and @Sam2", None)]


def test_an_email_mentions_its_person_under_the_email_rule_without_trailing_punctuation():
    found = find("ask @SAM.LEE@Example.com.", PEOPLE + [OTHER_SAM_LEE])
    assert found.person_ids == ["u-samlee"]
    assert found.ambiguous == []
    assert found.pieces[-1] == Piece("text", ".", None)


def test_a_shared_name_is_ambiguous_and_mentions_nobody_but_their_emails_do():
    people = [SAM_LEE, OTHER_SAM_LEE]
    found = find("@Sam Lee please", people)
    assert found.person_ids == []
    assert found.ambiguous == ["Sam Lee"]
    assert found.pieces[0] == Piece("ambiguous", "@Sam Lee", None)
    assert "Sam Lee" in ambiguity_note("Sam Lee") and "email" in ambiguity_note("Sam Lee")
    assert find("@slee@example.org please", people).person_ids == ["u-samlee2"]


def test_an_at_inside_a_word_or_an_unknown_name_is_plain_text():
    found = find("mail me at bob@Sam or @Nobody; @", PEOPLE)
    assert found.person_ids == []
    assert "".join(piece.text for piece in found.pieces) == "mail me at bob@Sam or @Nobody; @"


def test_a_person_mentioned_twice_is_listed_once_and_the_pieces_rebuild_the_text():
    text = "@Sam Lee <b>x</b> @sam lee"
    found = find(text, PEOPLE)
    assert found.person_ids == ["u-samlee"]
    assert "".join(piece.text for piece in found.pieces) == text


def test_the_suggestions_are_names_but_an_email_where_two_share_a_name():
    assert suggestions([SAM, SAM_LEE, OTHER_SAM_LEE, ("u-x", " ", "x@example.com")]) == [
        "Sam", "sam.lee@example.com", "slee@example.org", "x@example.com"]
    # and each suggestion, written after @, mentions exactly its person
    people = [SAM, SAM_LEE, OTHER_SAM_LEE]
    for person, handle in zip(people, suggestions(people)):
        assert find(f"@{handle} hi", people).person_ids == [person[0]]
