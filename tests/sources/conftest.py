"""The folder's fixtures: the servers of source_servers.py."""
from source_servers import postgresql, prometheus_server, web

__all__ = ["postgresql", "prometheus_server", "web"]
