"""Building the app: URL builders are compiled only when url_for first needs them, and build what werkzeug's own
rules build."""
from werkzeug.routing import Map, Rule

from okr import create_app


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
