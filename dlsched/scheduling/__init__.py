"""The scheduler core shared by the simulator and the runtime: plugins, profiles, the cycle."""
