"""Metric sources: key results that update themselves from systems inside the company's network.

Here, Flask-free and never touching the service's own database: reading one number from another system (an HTTP
JSON API, a CSV file, a PostgreSQL or SQLite query, Prometheus), with the address rules and limits that keep it
safe. okr.sources.reading is the interface; the other modules are its kinds.
"""
