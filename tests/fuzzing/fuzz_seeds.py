"""Small valid inputs, one per trace format and YAML loader: what the fuzzer mutates.

Each ``Target`` knows how to load a file in-process (the function the CLI calls) and, for
traces, its delimiter, whether it has a header and which column names a job (a repeated id
must fail there; in Philly and Gavel files ids come from line numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.loader import load_cluster_yaml
from dlsched.run_config import RunConfig
from dlsched.runtime.auth import load_tokens
from dlsched.tenancy.loader import load_tenants
from dlsched.workload.readers import read_trace


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # "trace" or "yaml"
    seed: str
    suffix: str = ".csv"
    delimiter: str = ","
    header: bool = True
    id_column: int | None = None  # the column of the job id, if the file gives one
    time_column: int | None = None  # an ISO date-time column
    empty_ok: bool = False  # an empty file is valid (a run file of all defaults)

    def load(self, path: Path, detect: bool = False) -> Any:
        if self.kind == "trace":
            return read_trace(path, None if detect else self.name)
        return YAML_LOADERS[self.name](path)


YAML_LOADERS: dict[str, Callable[[Path], Any]] = {
    "cluster": load_cluster_yaml,
    "tenants": load_tenants,
    "run": lambda path: RunConfig.from_yaml(path, {}),
    "tokens": load_tokens,
}

TRACES = (
    Target("philly", "trace", "timestamp,duration,num_gpus,gpu_time,cluster\n"
           "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
           "2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\n"
           "2017-10-09 08:00:00,600,4,2400,11cb48\n", time_column=0),
    Target("itp", "trace", "job_id,submission_time,duration,num_gpu\n"
           "a1,0,100,1\nb2,10,3600,2\nc3,50,20,8\n", id_column=0),
    Target("elasticflow", "trace",
           "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,"
           "duration\n"
           "bdd640fb,3715485,3249,deepspeech2,3716178,32,1,1075\n"
           "23b8c1e9,3717550,48266,inception3,3720405,64,8,3604\n", id_column=0),
    Target("alibaba-2023", "trace",
           "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
           "deletion_time,scheduled_time\n"
           "p0,8000,16384,2,1000,,BE,Succeeded,10,500,20\n"
           "p1,4000,8192,1,500,V100M16|V100M32,LS,Running,30,900,35\n"
           "p2,1000,1024,1,1000,P100,Burstable,Failed,40,100,41\n", id_column=0),
    Target("alibaba-dlrm-2025", "trace",
           "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
           "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,"
           "max_instance_per_node,creation_time,scheduled_time,deletion_time\n"
           "i0,HN,app_0,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,,,\n"
           "i1,HN,app_0,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,100.0,160.0,1160.0\n"
           "i2,HN,app_9,8,8,1,1,25,25,96.0,96.0,255.0,300.0,2,1435.0,1435.0,1560.0\n",
           id_column=0),
    Target("alibaba-pai-2020", "trace",
           "j1,tensorflow,1.0,Terminated,1000.0,1600.0,600.0,29.296875,50.0,MISC\n"
           "j2,worker,2.0,Terminated,1200.0,4800.0,800.0,60.0,200.0,V100\n"
           "j3,worker,1.0,Failed,1300.0,1900.0,400.0,20.0,100.0,T4\n", header=False),
    Target("acme", "trace",
           "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
           "duration,queue,gpu_time\n"
           "5778432,u5907,1,8,128,Pretrain,FAILED,2023-03-01 00:18:22+08:00,"
           "2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0\n"
           "5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,"
           "2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0\n",
           id_column=0, time_column=7),
    Target("pollux", "trace", "name,time,application,num_replicas,batch_size\n"
           "cifar10-0,107,cifar10,6,2048\ndeepspeech2-1,110,deepspeech2,6,320\n"
           "ncf-2,300,ncf,1,256\n", id_column=0),
    Target("chronus", "trace",
           "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
           "expect_time_list,expect_value_list,best_effort,job_type\n"
           "3,vc_6214e9,1,61,8388,inception_v3,83,18,119,10,0,strict\n"
           "19,vc_2869ce,1,31,5854,alexnet,130,23,31,10,1,best\n"
           "20,vc_2869ce,2,40,5854,alexnet,130,23,159-189,10-8,0,soft\n", id_column=0),
    Target("helios", "trace",
           "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
           "duration,queue\n"
           "11,uA,vcX,1,4,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
           "2020-06-09 19:41:01,3600,0\n"
           "12,uB,vcY,8,32,1,FAILED,2020-06-09 18:42:01,2020-06-09 18:45:01,"
           "2020-06-09 18:55:01,600,180\n", id_column=0, time_column=7),
    Target("gavel", "trace",
           "ResNet-18 (batch size 128)\tpython3 main.py --batch_size 128\tcifar10\t--num_steps"
           "\t1\t925982\t4\t1\t-1.000000\t0\n"
           "Transformer (batch size 128)\tpython3 train.py -batch_size 128\ttranslation\t-step"
           "\t1\t44334\t2\t1\t-1.000000\t120\n",
           suffix=".trace", delimiter="\t", header=False),
    Target("gavel-philly", "trace",
           "Transformer (batch size 128)\tpython3 train.py -batch_size 128\t-step\t1\t20851"
           "\t0.000000\t1\n"
           "Recommendation (batch size 8192)\tpython3 train.py --batch_size 8192\t-n\t1\t2337"
           "\t266564.000000\t1\n",
           suffix=".trace", delimiter="\t", header=False),
)

YAMLS = (
    Target("cluster", "yaml", "name: fuzz\n"
           "topology:\n  nvlink_gbps: 300\n  pcie_gbps: 32\n"
           "node_groups:\n"
           "  - count: 2\n    gpu_type: V100\n    gpus: 4\n    cpus: 32\n    nvlink_domain: 4\n"
           "  - count: 1\n    gpu_type: T4\n    gpus: 2\n    prefix: small\n    rack: r1\n"
           "nodes:\n  - name: cpu-a\n    gpus: 0\n    memory_gb: 64\n", suffix=".yaml"),
    Target("tenants", "yaml", "flavors:\n  - name: v100\n    gpu_types: [V100]\n"
           "cohorts:\n  - name: org\n"
           "cluster_queues:\n"
           "  - name: a\n    cohort: org\n    quotas:\n      v100:\n        gpu:\n"
           "          nominal: 4\n          borrowing_limit: 2\n"
           "    preemption:\n      reclaim_within_cohort: any\n"
           "  - name: b\n    cohort: org\n    quotas: {v100: {gpu: 4}}\n"
           "local_queues:\n  - name: team-a\n    cluster_queue: a\n"
           "fair_sharing:\n  enabled: true\n", suffix=".yaml"),
    Target("run", "yaml", "trace: philly-sample\ncluster: philly\npolicies: [fifo, tiresias]\n"
           "seed: 3\nlimit: 100\nrestart_overhead: 30\npolicy_options:\n  thresholds: 3600\n"
           "jobs_format: csv\n", suffix=".yaml", empty_ok=True),
    Target("tokens", "yaml", "tenants:\n  - name: team-a\n    token: 0123456789abcdef-a\n"
           "    queues: [team-a, shared]\n  - name: ops\n    token: 0123456789abcdef-ops\n"
           "    admin: true\n", suffix=".yaml"),
)

TARGETS = {t.name: t for t in TRACES + YAMLS}
