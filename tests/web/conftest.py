import pytest


@pytest.fixture
def key_result_fields():
    """The dashboard's tests look at a key result as a person would keep one: 100 customers of 500."""
    return {"name": "Reach 500 customers", "type": "positive", "current_value": "100", "target_value_min": "500",
            "confidence": "0.8"}
