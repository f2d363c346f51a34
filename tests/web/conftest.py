import pytest


@pytest.fixture
def key_result_fields():
    """The dashboard's key result: 100 customers of 500, confidence 0.8."""
    return {"name": "Reach 500 customers", "type": "positive", "current_value": "100", "target_value_min": "500",
            "confidence": "0.8"}
