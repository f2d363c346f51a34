import pytest

from helpers import make_objective, make_team, make_user


@pytest.fixture
def alignment(client, runner, cycle):
    """Teams Red and Blue, users Ada and Bob, and four objectives of `cycle`: root (company, Red, Ada) with
    the children child (Blue, Ada) and mine (personal, Red, Bob), and loose (none of these)."""
    red, blue = make_team(client, "Red")["id"], make_team(client, "Blue")["id"]
    ada = make_user(runner)["id"]
    bob = make_user(runner, "Bob", "bob@example.com")["id"]
    c = cycle["id"]
    o = {}
    o["root"] = make_objective(client, c, "root", team_id=red, assignee_id=ada, is_company=True)
    o["child"] = make_objective(client, c, "child", team_id=blue, assignee_id=ada,
                                parent_objective_id=o["root"]["id"])
    o["mine"] = make_objective(client, c, "mine", team_id=red, assignee_id=bob, is_personal=True,
                               parent_objective_id=o["root"]["id"])
    o["loose"] = make_objective(client, c, "loose")
    return {"cycle": c, "red": red, "blue": blue, "ada": ada, "bob": bob, "o": o}
