"""What-if replay: the service's own history as a trace (``dlsched history export``), for the
simulator to replay under other policies and quotas (docs/what-if.md)."""
