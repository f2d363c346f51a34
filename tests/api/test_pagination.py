"""Keyset pagination shared by every list: page_size, page_token and next_page_token."""
import base64
import itertools
import re
from urllib.parse import urlencode

import pytest

from helpers import (
    assert_error, make_cycle, make_key_result, make_objective, make_team, make_user, token_of,
)

ALL_LISTS = ["cycles", "teams", "users", "objectives", "keyresults", "objective_keyresults"]
DELETABLE_LISTS = [kind for kind in ALL_LISTS if kind != "users"]
URL_SAFE_BASE64 = re.compile(r"[A-Za-z0-9_-]+=*")
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def decode(token):
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()


class Listing:
    """One list endpoint, with a way to add and delete its rows."""

    def __init__(self, client, path, key, params=(), make=None, delete_path=None):
        self.client, self.path, self.key = client, path, key
        self.params, self._make, self.delete_path = list(params), make, delete_path
        self.counter = itertools.count()

    def get(self, *pairs, **query):
        pairs = self.params + list(pairs) + list(query.items())
        return self.client.get(f"{self.path}?{urlencode(pairs)}" if pairs else self.path)

    def page(self, **query):
        response = self.get(**query)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert set(body) == {"next_page_token", self.key}
        return body

    def ids(self, **query):
        return [row["id"] for row in self.page(**query)[self.key]]

    def make(self, count=1):
        return [self._make(next(self.counter)) for _ in range(count)]

    def delete(self, row_id):
        assert self.client.delete(f"{self.delete_path}/{row_id}").status_code == 200

    def walk(self, page_size):
        """Every page in turn; returns the pages' id lists."""
        pages, token = [], None
        while True:
            query = {"page_size": page_size, **({"page_token": token} if token else {})}
            body = self.page(**query)
            pages.append([row["id"] for row in body[self.key]])
            token = body["next_page_token"]
            if token is None:
                return pages
            assert len(pages) < 1000, "paging does not end"


@pytest.fixture
def lists(client, runner):
    """Builds a Listing by name; parents are made up front, so rows are numbered from 1."""

    def build(kind):
        if kind == "cycles":
            return Listing(client, "/v1/cycles", "cycles",
                           make=lambda n: make_cycle(client, f"cycle {n}")["id"],
                           delete_path="/v1/cycles")
        if kind == "teams":
            return Listing(client, "/v1/teams", "teams",
                           make=lambda n: make_team(client, f"team {n}")["id"],
                           delete_path="/v1/teams")
        if kind == "users":
            return Listing(client, "/v1/users", "users",
                           make=lambda n: make_user(runner, f"U{n}", f"u{n}@example.com")["id"])
        cycle = make_cycle(client, "parent")
        if kind == "objectives":
            return Listing(client, "/v1/objectives", "objectives", [("cycle_id", cycle["id"])],
                           make=lambda n: make_objective(client, cycle["id"], name=f"o{n}")["id"],
                           delete_path="/v1/objectives")
        objective = make_objective(client, cycle["id"], name="parent")

        def make_kr(n):
            return make_key_result(client, objective["id"], name=f"kr{n}")["id"]

        if kind == "keyresults":
            return Listing(client, "/v1/keyresults", "keyresults", [("cycle_id", cycle["id"])],
                           make=make_kr, delete_path="/v1/keyresults")
        assert kind == "objective_keyresults"
        return Listing(client, f"/v1/objectives/{objective['id']}/keyresults", "keyresults",
                       make=make_kr, delete_path="/v1/keyresults")

    return build


@pytest.fixture(params=ALL_LISTS)
def listing(request, lists):
    return lists(request.param)


@pytest.fixture(params=DELETABLE_LISTS)
def deletable(request, lists):
    return lists(request.param)


# --- page_size ------------------------------------------------------------------------


def test_default_page_size_is_100(lists):
    cycles = lists("cycles")
    ids = cycles.make(101)
    first = cycles.page()
    assert [row["id"] for row in first["cycles"]] == ids[:100]
    assert first["next_page_token"] is not None
    second = cycles.page(page_token=first["next_page_token"])
    assert [row["id"] for row in second["cycles"]] == ids[100:]
    assert second["next_page_token"] is None


def test_empty_page_token_counts_as_absent(lists):
    cycles = lists("cycles")
    ids = cycles.make(3)
    body = cycles.page(page_token="", page_size=2)
    assert [row["id"] for row in body["cycles"]] == ids[:2]


@pytest.mark.parametrize("size", [1, 2, 3, 1000])
def test_page_size_from_1_to_1000_is_accepted(listing, size):
    ids = listing.make(3)
    body = listing.page(page_size=size)
    assert [row["id"] for row in body[listing.key]] == ids[:size]
    assert (body["next_page_token"] is None) == (size >= 3)


@pytest.mark.parametrize("size", ["", "0", "1001", "-1", "abc", "1.5", "1e2", "9" * 30, "0x10"])
def test_page_size_outside_1_to_1000_is_400(listing, size):
    listing.make(1)
    assert_error(listing.get(page_size=size), 400, "page_size")


def test_repeated_page_size_is_400(listing):
    listing.make(1)
    assert_error(listing.get(("page_size", "2"), ("page_size", "2")), 400, "page_size")


def test_page_size_may_change_between_pages(lists):
    cycles = lists("cycles")
    ids = cycles.make(6)
    first = cycles.page(page_size=2)
    second = cycles.page(page_size=3, page_token=first["next_page_token"])
    assert [row["id"] for row in second["cycles"]] == ids[2:5]
    assert cycles.ids(page_size=100, page_token=second["next_page_token"]) == ids[5:]


# --- next_page_token ------------------------------------------------------------------


def test_token_is_url_safe_base64_of_the_last_rows_sequence_number(listing):
    listing.make(5)
    first = listing.page(page_size=2)
    assert URL_SAFE_BASE64.fullmatch(first["next_page_token"])
    assert decode(first["next_page_token"]) == "2"
    second = listing.page(page_size=2, page_token=first["next_page_token"])
    assert decode(second["next_page_token"]) == "4"
    third = listing.page(page_size=2, page_token=second["next_page_token"])
    assert third["next_page_token"] is None


def test_token_names_the_rows_sequence_number_not_its_position(lists):
    cycles = lists("cycles")
    first, *_ = cycles.make(4)
    cycles.delete(first)
    assert decode(cycles.page(page_size=1)["next_page_token"]) == "2"


def test_token_is_null_when_the_page_holds_exactly_the_remaining_rows(listing):
    listing.make(2)
    assert listing.page(page_size=2)["next_page_token"] is None
    listing.make(1)
    assert listing.page(page_size=2)["next_page_token"] is not None
    assert listing.page(page_size=3)["next_page_token"] is None


def test_token_is_null_on_an_empty_list(listing):
    assert listing.page() == {"next_page_token": None, listing.key: []}


def test_walking_pages_returns_every_row_once_in_creation_order(listing):
    ids = listing.make(7)
    pages = listing.walk(page_size=3)
    assert pages == [ids[0:3], ids[3:6], ids[6:7]]
    assert listing.page(page_size=1000)[listing.key] == listing.page()[listing.key]


def test_token_without_padding_is_accepted(listing):
    ids = listing.make(5)
    token = listing.page(page_size=2)["next_page_token"]
    assert token.endswith("=")
    assert listing.ids(page_size=2, page_token=token.rstrip("=")) == ids[2:4]
    assert listing.ids(page_size=2, page_token=token) == ids[2:4]


def test_token_zero_starts_at_the_first_row(lists):
    cycles = lists("cycles")
    ids = cycles.make(2)
    assert cycles.ids(page_token=token_of("0")) == ids


@pytest.mark.parametrize("token", [
    "!!!", "%%%", "ü", token_of("abc"), token_of("-1"), token_of("1.5"), token_of("1e3"), token_of(" 1"),
])
def test_bad_token_is_400(listing, token):
    listing.make(1)
    assert_error(listing.get(page_token=token), 400, "page_token")


@pytest.mark.parametrize("number", [999, 2**63 - 1, 2**63, 10**30])
def test_token_past_the_end_gives_an_empty_last_page(listing, number):
    listing.make(2)
    body = listing.page(page_token=token_of(str(number)))
    assert body == {"next_page_token": None, listing.key: []}


# --- keyset paging under concurrent changes -------------------------------------------


def test_rows_created_during_paging_cause_no_repeats_or_skips(listing):
    ids = listing.make(4)
    first = listing.page(page_size=3)
    ids += listing.make(3)
    seen = [row["id"] for row in first[listing.key]]
    token = first["next_page_token"]
    while token:
        body = listing.page(page_size=3, page_token=token)
        seen += [row["id"] for row in body[listing.key]]
        token = body["next_page_token"]
    assert seen == ids


@pytest.mark.parametrize("deleted", [0, 1], ids=["an-earlier-row", "the-row-the-token-points-at"])
def test_rows_deleted_during_paging_cause_no_skips(deletable, deleted):
    a, b, c, d, e = rows = deletable.make(5)
    first = deletable.page(page_size=2)
    deletable.delete(rows[deleted])
    second = deletable.page(page_size=2, page_token=first["next_page_token"])
    assert [row["id"] for row in second[deletable.key]] == [c, d]
    assert deletable.ids(page_size=2, page_token=second["next_page_token"]) == [e]


def test_deleting_every_remaining_row_gives_an_empty_last_page(deletable):
    a, b, c, d = deletable.make(4)
    first = deletable.page(page_size=2)
    for row_id in (b, c, d):
        deletable.delete(row_id)
    assert deletable.page(page_token=first["next_page_token"]) == {
        "next_page_token": None, deletable.key: []}


# --- filtered lists -------------------------------------------------------------------


def walk(client, path, key, page_size=2, **params):
    ids, token = [], None
    while True:
        query = {**params, "page_size": page_size, **({"page_token": token} if token else {})}
        response = client.get(path, query_string=query)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert len(body[key]) <= page_size
        ids += [row["id"] for row in body[key]]
        token = body["next_page_token"]
        if token is None:
            return ids


def test_objectives_are_paged_within_their_cycle(client):
    mine, other = make_cycle(client, "mine"), make_cycle(client, "other")
    expected = []
    for n in range(5):
        expected.append(make_objective(client, mine["id"], name=f"mine {n}")["id"])
        make_objective(client, other["id"], name=f"other {n}")
    assert walk(client, "/v1/objectives", "objectives", cycle_id=mine["id"]) == expected


def test_key_results_are_paged_within_their_cycle(client):
    mine, other = make_cycle(client, "mine"), make_cycle(client, "other")
    mine_objectives = [make_objective(client, mine["id"], name=f"m{n}") for n in range(2)]
    other_objective = make_objective(client, other["id"], name="other")
    expected = []
    for n in range(3):
        for objective in mine_objectives:
            expected.append(make_key_result(client, objective["id"], name=f"kr{n}")["id"])
            make_key_result(client, other_objective["id"], name=f"other {n}")
    assert walk(client, "/v1/keyresults", "keyresults", cycle_id=mine["id"]) == expected


def test_key_results_are_paged_within_their_objective(client):
    cycle = make_cycle(client)
    mine = make_objective(client, cycle["id"], name="mine")
    other = make_objective(client, cycle["id"], name="other")
    expected = []
    for n in range(5):
        expected.append(make_key_result(client, mine["id"], name=f"mine {n}")["id"])
        make_key_result(client, other["id"], name=f"other {n}")
    assert walk(client, f"/v1/objectives/{mine['id']}/keyresults", "keyresults") == expected


def test_key_results_follow_their_objective_to_another_cycle(client):
    old, new = make_cycle(client, "old"), make_cycle(client, "new")
    objective = make_objective(client, old["id"])
    expected = [make_key_result(client, objective["id"], name=f"kr{n}")["id"] for n in range(3)]
    moved = {"name": objective["name"], "cycle_id": new["id"]}
    assert client.post(f"/v1/objectives/{objective['id']}", json=moved).status_code == 200
    assert walk(client, "/v1/keyresults", "keyresults", cycle_id=new["id"]) == expected
    assert walk(client, "/v1/keyresults", "keyresults", cycle_id=old["id"]) == []


@pytest.mark.parametrize("path", ["/v1/objectives", "/v1/keyresults"])
def test_cycle_filtered_lists_need_cycle_id(client, path):
    make_cycle(client)
    assert_error(client.get(path), 400, "cycle_id")
    assert_error(client.get(path, query_string={"cycle_id": ""}), 400, "cycle_id")
    assert_error(client.get(path, query_string={"cycle_id": UNKNOWN_ID}), 404)


def test_key_results_of_an_unknown_objective_is_404(client):
    assert_error(client.get(f"/v1/objectives/{UNKNOWN_ID}/keyresults"), 404)
