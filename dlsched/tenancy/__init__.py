"""Multi-tenant admission with Kueue's semantics: flavors, cluster queues, cohorts, local
queues, quota accounting, preemption and fair sharing (see docs/tenancy.md)."""
