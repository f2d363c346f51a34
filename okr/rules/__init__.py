"""The rules without HTTP: what a valid body, id, decimal and JSON text are, and how a refusal is worded.

The API, the pages, the commands and the importers all check with these; none of them needs Flask.
"""
