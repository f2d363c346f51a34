"""Metric sources: key results that update themselves from systems inside the company's network.

An admin's connection (a kind, an address, a sealed secret) and an editor's source (a key result's query
through it) are kept by okr.store.connections and okr.store.sources. Here, Flask-free: reading one number from
another system (an HTTP JSON API, a CSV file, a PostgreSQL or SQLite query, Prometheus) with the address rules
and limits that keep it safe, never touching the service's own database (okr.sources.reading is the interface;
documents, fetching, prometheus, sql_queries and values its kinds); sealing secrets (sealing); and turning
readings into check-ins with their evidence, on a schedule, with back-off (syncing).
"""
