"""A self-hosted OKR service: objectives, key results, cycles, teams and users over JSON."""
import os
import sys

from flask import Flask
from jinja2 import BytecodeCache
from werkzeug.routing import Rule

from . import proxies, settings


def schema_path():
    """schema.sql beside the package in a checkout, or where a plain pip install puts it."""
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schema.sql")
    installed = os.path.join(sys.prefix, "share", "okr", "schema.sql")
    return checkout if os.path.exists(checkout) or not os.path.exists(installed) else installed


def sync_once(ensure_sync):
    """Flask's ensure_sync, asked once per function: Flask asks for every hook and view of every request,
    and its inspect of each function was a visible share of a signed GET's time (docs/design.md, Worker processes)."""
    checked = {}

    def ensure(func):
        try:
            return checked[func]
        except KeyError:
            checked[func] = sync = ensure_sync(func)
            return sync
        except TypeError:  # an unhashable callable
            return ensure_sync(func)

    return ensure


class LazyRule(Rule):
    """A URL rule whose URL builders are compiled the first time url_for needs them, and whose string is parsed
    once per process.

    Werkzeug compiles two builders per rule, through ast, as the rule is added: most of what building the app
    costs (docs/design.md, Building the app), paid by every `okr` command and every test, for builders that a
    request to the API never uses. Werkzeug without _compile_builder would simply build them all up front.

    Parsing the rule strings was then most of what was left, paid again for each app a process builds (every
    test builds one). What compile() makes of a string depends only on it, the map's settings and converter
    classes, so a later rule of the same takes it, with converters of its own (they belong to their map). So does
    a builder: its code takes the rule it builds for, and with it that rule's converters.
    """

    parsed = {}  # (the string and what else compile reads) -> (parts, trace, the get_converter calls it made)
    built = {}  # (that, the defaults, append_unknown) -> the builder function, to be bound to each rule

    def parse_key(self):
        return (self.rule, self.subdomain, self.host, self.merge_slashes, self.map.host_matching,
                tuple(self.map.converters.items()))

    def compile(self):
        key = self.parse_key()
        try:
            parts, trace, converters = LazyRule.parsed[key]
        except KeyError:
            self._converter_calls = []
            try:
                super().compile()
                LazyRule.parsed[key] = (tuple(self._parts), tuple(self._trace), tuple(self._converter_calls))
            finally:
                del self._converter_calls
            return
        # What Rule.compile sets, from what it set for the first rule of this key.
        self._parts, self._trace = list(parts), list(trace)
        self._converters = {}
        for variable, name, args, kwargs in converters:
            self._converters[variable] = self.get_converter(variable, name, args, kwargs)
            self.arguments.add(variable)
        self._build = self._compile_builder(False).__get__(self, None)
        self._build_unknown = self._compile_builder(True).__get__(self, None)

    def get_converter(self, variable_name, converter_name, args, kwargs):
        calls = getattr(self, "_converter_calls", None)
        if calls is not None:
            calls.append((variable_name, converter_name, args, kwargs))
        return super().get_converter(variable_name, converter_name, args, kwargs)

    def _compile_builder(self, append_unknown=True):
        compile_now = super()._compile_builder
        compiled = []

        def build(rule, *args, **kwargs):
            if not compiled:  # two threads may both compile; either result is the same function
                compiled.append(rule.kept_builder(compile_now, append_unknown).__get__(rule, None))
            return compiled[0](*args, **kwargs)

        return build

    def kept_builder(self, compile_now, append_unknown):
        """The builder function of this rule's string, defaults and kind, compiled once per process: it takes
        the rule it builds for (and so its converters) as its first argument."""
        key = (self.parse_key(), tuple(sorted((self.defaults or {}).items())), append_unknown)
        try:
            return LazyRule.built[key]
        except KeyError:
            LazyRule.built[key] = function = compile_now(append_unknown)
            return function
        except TypeError:  # a default that cannot be a key
            return compile_now(append_unknown)


class KeptTemplates(BytecodeCache):
    """Jinja's bytecode cache, in memory, for every app this process builds: the first app to render a template
    compiles it (lexing, parsing and Python's compile: most of a first render's time), later apps take the code.
    The key holds the template's name, its source's checksum and the environment's options that shape the code,
    so a changed template or an app with other options compiles anew."""

    def __init__(self):
        self.kept = {}

    @staticmethod
    def shape(environment):
        return (environment.block_start_string, environment.block_end_string,
                environment.variable_start_string, environment.variable_end_string,
                environment.comment_start_string, environment.comment_end_string,
                environment.line_statement_prefix, environment.line_comment_prefix, environment.trim_blocks,
                environment.lstrip_blocks, environment.newline_sequence, environment.keep_trailing_newline,
                environment.optimized, environment.is_async, isinstance(environment.autoescape, bool)
                and environment.autoescape, tuple(sorted(environment.extensions)),
                tuple(sorted(environment.filters)), tuple(sorted(environment.tests)))

    def load_bytecode(self, bucket):
        code = self.kept.get((bucket.key, bucket.checksum, self.shape(bucket.environment)))
        if code is not None:
            bucket.code = code

    def dump_bytecode(self, bucket):
        self.kept[(bucket.key, bucket.checksum, self.shape(bucket.environment))] = bucket.code


KEPT_TEMPLATES = KeptTemplates()


def create_app(test_config=None):
    """Builds the app: the settings' defaults (okr/settings.py), then OKR_* environment variables, then
    test_config, each value parsed to its setting's type (ValueError of one line for one it cannot take)."""
    app = Flask(__name__, static_folder=None)
    app.url_rule_class = LazyRule
    app.jinja_options = {**app.jinja_options, "bytecode_cache": KEPT_TEMPLATES}
    app.ensure_sync = sync_once(app.ensure_sync)
    # //v1/cycles is not a redirect to /v1/cycles but an unknown path.
    app.url_map.merge_slashes = False
    app.config.from_mapping(settings.defaults())
    from .api import bodies, paging

    # Fixed values, not settings: the API's paging and body limit are in its OpenAPI document.
    app.config.from_mapping(
        SCHEMA=schema_path(),
        PAGE_SIZE=paging.PAGE_SIZE,
        MAX_PAGE_SIZE=paging.MAX_PAGE_SIZE,
        MAX_CONTENT_LENGTH=bodies.MAX_BODY_BYTES,
        # A form's field may be as large as the body (Werkzeug's default is 500 kB): the People page's CSV of
        # people (okr.accounts.people_csv, up to 1 MB) comes pasted, and goes from its preview to Apply, in one.
        MAX_FORM_MEMORY_SIZE=bodies.MAX_BODY_BYTES,
        API_VERSION="1.0.0",
        # The stylesheet's cache life; its URL changes with its content.
        SEND_FILE_MAX_AGE_DEFAULT=86400,
    )
    given = dict(test_config or {})
    # What is given beats the environment; a variable it overrides is not read, so cannot stop the app.
    app.config.from_mapping(settings.from_environment(skip=given))
    app.config.from_mapping(settings.typed(given))
    proxies.install(app)
    # For commands that need an app of their own on another file (okr demo builds its database so).
    app.extensions["okr.create_app"] = create_app
    # Keep the spec's field order, and send Unicode as itself rather than \u escapes.
    app.json.sort_keys = False
    app.json.ensure_ascii = False

    from . import api, assistants, cli, db, pipeline, web

    # The pipeline first: its after-request hooks then run last, on every answer, a failed commit's too.
    pipeline.init_app(app)
    db.init_app(app, pipeline.request_writes)
    api.init_app(app)
    web.init_app(app)
    assistants.init_app(app)
    cli.init_app(app)
    return app
