"""What the edit pages' tests share: a page parsed, a form posted with the session's CSRF token, its hidden fields."""
import re

from html_tree import BROWSER, parse

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def get(client, path, status=200):
    """The page at path, as a browser asks for it, parsed; its status checked."""
    response = client.get(path, headers=BROWSER)
    assert response.status_code == status, response.get_data(as_text=True)[:2000]
    return parse(response.get_data(as_text=True))


def post_form(client, path, token_page, **fields):
    """Posts fields to path as a browser does, with the CSRF token of the form at token_page unless given."""
    if "csrf_token" not in fields:
        page = client.get(token_page, headers=BROWSER).get_data(as_text=True)
        fields["csrf_token"] = CSRF.search(page).group(1)
    return client.post(path, data=fields, headers=BROWSER)


def hidden(tree):
    """A form's hidden fields, by name."""
    return {el.attrs["name"]: el.attrs["value"] for el in tree.find_all("input", type="hidden")}
