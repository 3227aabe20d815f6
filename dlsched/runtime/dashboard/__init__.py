"""The web dashboard of ``dlsched serve`` (``/``): cluster, queues and tenants, jobs, a job's
page; server-rendered HTML (Jinja2) kept live by a small script. See ``docs/dashboard.md``."""
