"""What an id is: a lowercase UUID, as the service writes them; and the largest row id SQLite holds."""
import re

# The OpenAPI document uses the same pattern.
UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UUID_RE = re.compile(UUID_PATTERN)
MAX_ROW_ID = 2**63 - 1
