"""The server: waitress and its workers, the connection limits, the background process, the serving lock, Litestream."""
