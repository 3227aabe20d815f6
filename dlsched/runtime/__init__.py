"""The real runtime: a scheduler service that runs jobs with the same core as the simulator.

It differs from the simulator only in its clock (``WallClock``) and executor (``LocalExecutor``
or ``RayExecutor``).
Its dependencies are optional (``pip install dlsched[runtime]``), so nothing here is imported
by ``dlsched.runtime`` itself.
"""
