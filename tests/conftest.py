import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

import dmlpy as dml

# GPU round trips make example timing meaningless; examples are derandomised in CI so a
# red run can be reproduced exactly.
settings.register_profile("dmlpy", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=bool(os.environ.get("CI")))
settings.load_profile("dmlpy")


@pytest.fixture(scope="session")
def device():
    with dml.create_device() as device:
        yield device


@pytest.fixture(scope="session")
def device_at():
    """Devices capped at a feature level, created once per level."""
    devices = {}

    def get(level):
        if level not in devices:
            devices[level] = dml.create_device(max_feature_level=level)
        return devices[level]

    yield get
    for device in devices.values():
        device.close()
