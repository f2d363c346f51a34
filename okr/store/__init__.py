"""The data package: every read and every write, one module per resource, and the read models of the reports,
the activity feed, the weekly mail and Your week.

Each write is one function that takes a connection inside the caller's transaction and plain
(already validated) values, and returns the row as written; it raises okr.errors' NotFound,
Invalid or Conflict, never anything of HTTP. Each read is a function named for what it reads, which
returns rows (or a cursor, or an iterator of them, where the caller streams). The API, the pages, the
commands, okr import, okr import-simpleokr and okr demo all read and write through here: SQL lives
nowhere else but in the schema's migrations (okr/store/schema.py) and schema.sql; the other modules only begin,
commit and roll back transactions and set PRAGMAs (tests/test_data_package.py checks it).
"""
