"""Every write, one module per resource.

Each write is one function that takes a connection inside the caller's transaction and plain
(already validated) values, and returns the row as written; it raises okr.errors' NotFound,
Invalid or Conflict, never anything of HTTP. The API, the pages, the commands, okr import,
okr import-simpleokr and okr demo all write through here: SQL that writes lives nowhere else but
in the migrations (okr/store/schema.py) and schema.sql.
"""
