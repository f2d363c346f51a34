"""What the tests of the People page's sign-in column share (tests/web/test_unlock.py, test_unlink.py): two
people with a password, signing in from an address, a page's CSRF token, and a person's row on the page."""
import re

from helpers import user_with_password

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
HERE, THERE = "192.0.2.10", "198.51.100.20"


def csrf(client, path="/login", address=HERE):
    page = client.get(path, headers=HTML, environ_base={"REMOTE_ADDR": address})
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def sign_in(client, email, password=PASSWORD, address=HERE):
    return client.post("/login", data={"csrf_token": csrf(client, address=address), "email": email,
                                       "password": password, "next": "/"}, environ_base={"REMOTE_ADDR": address})


def make_maya(app):
    return user_with_password(app, PASSWORD)


def make_ed(app):
    return user_with_password(app, PASSWORD, "Ed Itor", "ed@example.com", "editor")


def people_row(client, user):
    page = client.get("/people", headers=HTML)
    assert page.status_code == 200
    return re.search(rf'<tr id="u-{user["id"]}">.*?</tr>', page.text, re.S).group(0)
