"""The Kompute build itself: data must survive a trip through a kp tensor."""

import numpy as np


def test_kp_tensor_round_trips_every_element():
    # Kompute built against pybind11 2.10 with NumPy 2 returns element 0 repeated from
    # Tensor.data(); this fails loudly if the build ever regresses to that.
    import kp

    manager = kp.Manager()
    values = (np.arange(1000, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
    tensor = manager.tensor_t(values.copy())
    manager.sequence().eval(kp.OpTensorSyncDevice([tensor]))
    tensor.data()[:] = 0
    manager.sequence().eval(kp.OpTensorSyncLocal([tensor]))
    assert tensor.data().dtype == np.uint32 and np.array_equal(tensor.data(), values)
    manager.destroy()
