"""machine_info records the host and how busy it was."""

import os

from dragnet.measure.machine import load_average, machine_info


def test_machine_info_records_the_load_average():
    info = machine_info()
    assert info["cpu_count"] == os.cpu_count()
    la = info["load_average"]
    assert len(la) == 3 and all(isinstance(x, float) and x >= 0 for x in la)


def test_load_average_follows_the_kernel():
    before = os.getloadavg()
    la = load_average()
    after = os.getloadavg()
    # the 15-minute figure moves slowly: what was read lies between two readings around it
    assert min(before[2], after[2]) - 0.01 <= la[2] <= max(before[2], after[2]) + 0.01
