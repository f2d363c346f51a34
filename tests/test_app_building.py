"""Building the app: URL builders are compiled only when url_for first needs them, and build what werkzeug's own
rules build; a rule string is parsed once per process, and a later app's rules are what werkzeug's own make."""
from werkzeug.routing import Map, Rule

from okr import LazyRule, create_app


def test_building_the_app_compiles_no_url_builder(tmp_path, monkeypatch):
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


def test_every_rule_builds_what_werkzeug_builds(tmp_path):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    ours = list(app.url_map.iter_rules())
    plain = Map([Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods, defaults=rule.defaults)
                 for rule in ours], merge_slashes=False).bind("okr.test")
    lazy = app.url_map.bind("okr.test")
    for rule in ours:
        values = {name: f"a-{name}/b" if "path" in rule.rule else f"a-{name}" for name in rule.arguments}
        for extra in ({}, {"page_token": "x y", "team": "7"}):
            assert lazy.build(rule.endpoint, {**values, **extra}, method=sorted(rule.methods)[0]) == plain.build(
                rule.endpoint, {**values, **extra}, method=sorted(rule.methods)[0]), rule.rule


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
