import pytest


@pytest.fixture(autouse=True)
def no_okr_settings(clean_env):
    """Every server starts with the defaults, whatever OKR_ settings the shell running the tests has."""
