"""Metric sources: key results that update themselves from systems inside the company's network.

An admin's connection (a kind, an address, a sealed secret) and an editor's source (a key result's query
through it) are kept by okr.store.connections and okr.store.sources. Here: reading a number (reading), sealing
secrets (sealing), and turning readings into check-ins with their evidence, on a schedule, with back-off
(syncing).
"""
