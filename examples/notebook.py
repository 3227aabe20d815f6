# %% [markdown]
# # dlsched from a notebook
#
# `dlsched.simulate`, `dlsched.compare` and `dlsched.sweep` take the same options as the
# `dlsched` command (the fields of `RunConfig`), run the same code, and return pandas
# DataFrames. This file is a notebook in the percent format: open it in Jupyter (with
# jupytext), VS Code or Spyder, or run it as a script: `python examples/notebook.py`.
# `DLSCHED_EXAMPLE_JOBS` (default 200) bounds the jobs read, so that CI runs it quickly.

# %%
import os

import dlsched

jobs = int(os.environ.get("DLSCHED_EXAMPLE_JOBS", "200"))

# %% [markdown]
# ## One policy
# Tiresias on the first jobs of Pollux workload 1, on the Pollux testbed (64 T4 GPUs).

# %%
run = dlsched.simulate(trace="pollux-1", cluster="pollux-64", policy="tiresias", limit=jobs)
print(f"mean JCT {run.summary['jct_mean'] / 3600:.2f} h, "
      f"utilization {run.summary['utilization']:.1%}")
run.jobs[["job_id", "num_gpus", "submit_time", "jct", "preemptions"]].head()

# %% [markdown]
# The jobs table is the CLI's `jobs.csv`: e.g. queueing delay by job size.

# %%
run.jobs.groupby("num_gpus")["queueing_delay"].mean()

# %% [markdown]
# ## Several policies, the same work

# %%
comparison = dlsched.compare(trace="pollux-1", cluster="pollux-64",
                             policies=["fifo", "srtf", "tiresias"], limit=jobs)
comparison.summary[["jobs_finished", "jct_mean", "jct_p99", "makespan", "utilization"]]

# %% [markdown]
# ## A sweep with confidence intervals over seeds
# Synthetic traces resampled from Philly (`synthetic:philly-sample`), three seeds each, run in
# parallel on local processes; one row per run. 120 jobs an hour on Tiresias' 128 GPUs queue
# (on the 2,816-GPU `philly` cluster none waits, and every policy gives the same JCT).

# %%
table = dlsched.sweep(traces=["synthetic:philly-sample"], clusters=["tiresias-128"],
                      policies=["fifo", "tiresias"], seeds=[0, 1, 2],
                      options={"synthetic_jobs": max(jobs * 2, 10), "synthetic_rate": 120},
                      workers=2)
table.groupby("policy")["jct_mean"].agg(["mean", "std"])

# %% [markdown]
# Utilization over time, from the timeline table (matplotlib's default backend; `Agg` when
# run as a script).

# %%
ax = run.timeline.plot(x="time", y="used_gpus", drawstyle="steps-post", legend=False)
ax.set_xlabel("seconds"), ax.set_ylabel("GPUs in use")
