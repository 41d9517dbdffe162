import atexit
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

import dmlpy as dml


def log_validation_messages_to_a_file_of_this_worker():
    """Under `make validate`, each pytest-xdist worker logs to a file of its own, the Makefile's
    name and the worker's id: the layer truncates the file it opens, so workers sharing one
    would erase each other's messages. The Makefile reads every file that starts with the name."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    settings_dir = os.environ.get("VK_LAYER_SETTINGS_PATH")
    if not worker or not settings_dir or "VK_LAYER_KHRONOS_validation" not in os.environ.get("VK_INSTANCE_LAYERS", ""):
        return
    settings = (Path(settings_dir) / "vk_layer_settings.txt").read_text()
    settings = re.sub(r"^(khronos_validation\.log_filename = .*)$", rf"\g<1>.{worker}", settings, flags=re.MULTILINE)
    own_dir = Path(tempfile.mkdtemp(prefix="dmlpy-layer-settings-"))
    (own_dir / "vk_layer_settings.txt").write_text(settings)
    atexit.register(shutil.rmtree, own_dir, ignore_errors=True)
    os.environ["VK_LAYER_SETTINGS_PATH"] = str(own_dir)


log_validation_messages_to_a_file_of_this_worker()

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
