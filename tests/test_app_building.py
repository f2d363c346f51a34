"""Building the app: URL builders are compiled only when url_for first needs them, once per process, and build what
werkzeug's own rules build; a rule string is parsed once per process, and a later app's rules are what werkzeug's
own make; a template is compiled once per process, and anew when its source or the environment's options differ."""
import re

import jinja2
from werkzeug.routing import Map, Rule

from okr import KEPT_TEMPLATES, LazyRule, create_app


def test_building_the_app_compiles_no_url_builder(tmp_path, monkeypatch):
    monkeypatch.setattr(LazyRule, "built", {})  # as in a new process
    compiled = []
    real = Rule._compile_builder
    monkeypatch.setattr(Rule, "_compile_builder", lambda rule, *args: compiled.append(rule.rule) or real(rule, *args))
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    assert len(list(app.url_map.iter_rules())) > 50
    assert compiled == []
    with app.test_request_context():
        urls = {rule.endpoint: rule for rule in app.url_map.iter_rules()}
        endpoint = next(name for name, rule in urls.items() if not rule.arguments)
        app.url_for(endpoint)
    assert compiled and set(compiled) == {urls[endpoint].rule}


def test_every_rule_builds_what_werkzeug_builds_and_a_later_app_compiles_no_builder(tmp_path, monkeypatch):
    monkeypatch.setattr(LazyRule, "built", {})
    compiled = []
    real = Rule._compile_builder
    monkeypatch.setattr(Rule, "_compile_builder", lambda rule, *args: compiled.append(rule.rule) or real(rule, *args))
    for number in (1, 2):
        app = create_app({"TESTING": True, "DATABASE": tmp_path / f"okr{number}.db"})
        ours = list(app.url_map.iter_rules())
        lazy = app.url_map.bind("okr.test")
        asked = [(rule, {name: f"a-{name}/b" if "path" in rule.rule else f"a-{name}" for name in rule.arguments}
                  | extra, sorted(rule.methods)[0]) for rule in ours for extra in ({}, {"page_token": "x y", "team": "7"})]
        compiled.clear()
        built = [lazy.build(rule.endpoint, values, method=method) for rule, values, method in asked]
        # The first app compiles a builder per rule string (rules of one string on other methods take it); a
        # later app takes them all.
        if number == 1:
            assert set(compiled) == {rule.rule for rule in ours} and len(compiled) < len(ours)
        else:
            assert compiled == []
        plain = Map([Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods, defaults=rule.defaults)
                     for rule in ours], merge_slashes=False).bind("okr.test")
        for (rule, values, method), url in zip(asked, built):
            assert url == plain.build(rule.endpoint, values, method=method), rule.rule


def compiled(rule):
    """What Rule.compile left on rule: every attribute but its map, its builders and what Flask adds, its converters
    by class and state."""
    made = {name: value for name, value in vars(rule).items() if name not in ("map", "_build", "_build_unknown", "provide_automatic_options")}
    made["_converters"] = {name: (type(converter), {key: value for key, value in vars(converter).items()
                                                    if key != "map"})
                           for name, converter in rule._converters.items()}
    return made


def test_a_later_app_parses_no_rule_and_its_rules_are_what_werkzeug_makes(tmp_path, monkeypatch):
    create_app({"TESTING": True, "DATABASE": tmp_path / "first.db"})
    parsed = []
    real = Rule._parse_rule
    monkeypatch.setattr(Rule, "_parse_rule", lambda rule, string: parsed.append(string) or real(rule, string))
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    assert parsed == []
    ours = list(app.url_map.iter_rules())
    assert len(ours) > 50 and all(isinstance(rule, LazyRule) for rule in ours)
    plain = Map([Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods, defaults=rule.defaults,
                      strict_slashes=rule.strict_slashes) for rule in ours], merge_slashes=False)
    assert parsed  # werkzeug's own rules parsed theirs
    for mine, theirs in zip(ours, plain.iter_rules()):
        assert compiled(mine) == compiled(theirs), mine.rule
        assert all(converter.map is app.url_map for converter in mine._converters.values())
    our_urls, plain_urls = app.url_map.bind("okr.test"), plain.bind("okr.test")
    for rule in ours:
        method = sorted(rule.methods)[0]
        url = plain_urls.build(rule.endpoint, {name: "x" for name in rule.arguments}, method=method)
        assert our_urls.match(url, method=method) == plain_urls.match(url, method=method), rule.rule


def rendered_pages(app, monkeypatch):
    """The names of the templates an app's environment compiled while rendering the dashboard."""
    compiled = []
    real = jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile", lambda environment, source, name=None, *args, **kwargs: (
        compiled.append(name), real(environment, source, name, *args, **kwargs))[1])
    page = app.test_client().get("/", headers={"Accept": "text/html"})
    assert page.status_code == 200 and b"<main" in page.data, page.status_code
    monkeypatch.setattr(jinja2.Environment, "compile", real)
    return compiled, page.data


def test_a_later_app_compiles_no_template_and_renders_the_same(tmp_path, monkeypatch, new_database):
    monkeypatch.setattr(KEPT_TEMPLATES, "kept", {})  # as in a new process
    first, first_page = rendered_pages(create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "1.db")}),
                                       monkeypatch)
    assert first  # the dashboard and the templates it extends
    second, second_page = rendered_pages(
        create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "2.db")}), monkeypatch)
    assert second == [] and strip_tokens(second_page) == strip_tokens(first_page)


def test_a_changed_template_or_other_options_compile_anew(tmp_path, monkeypatch, new_database):
    monkeypatch.setattr(KEPT_TEMPLATES, "kept", {})
    rendered_pages(create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "1.db")}), monkeypatch)
    other = create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "2.db")})
    other.jinja_env.trim_blocks = True  # options that shape the code
    assert rendered_pages(other, monkeypatch)[0]
    changed = create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "3.db")})
    real_source = changed.jinja_env.loader.get_source

    def edited(environment, name):
        source, filename, uptodate = real_source(environment, name)
        return source + "{# edited #}", filename, uptodate

    monkeypatch.setattr(changed.jinja_env.loader, "get_source", edited)
    assert rendered_pages(changed, monkeypatch)[0]


def strip_tokens(page):
    """A page without its one-time values (the CSRF token, the style nonce)."""
    return re.sub(rb'(value|nonce|content)="[^"]*"', b"", page)
