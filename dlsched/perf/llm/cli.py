"""``dlsched plan MODEL --gpus N --cluster C``: the parallelism planner's ranked table."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dlsched.errors import ConfigError, DlschedError
from dlsched.wording import count_of

if TYPE_CHECKING:  # the CLI imports the planner only when it runs
    from dlsched.perf.llm.hardware import Fabric
    from dlsched.perf.llm.models import LlmModel

plan_app = typer.Typer(add_completion=False)
console = Console(stderr=True, soft_wrap=True, emoji=False)


@plan_app.command("plan")
def plan_command(
        model: Annotated[str, typer.Argument(
            help="A built-in model (gpt3-175b, megatron-1t, llama2-70b, llama3-405b, ...) or "
                 "a model YAML file (docs/llm.md).")],
        gpus: Annotated[int, typer.Option("--gpus", help="GPUs to train on.")],
        cluster: Annotated[str, typer.Option(
            "--cluster", help="A built-in cluster (megatron-selene, llama3-h100, ...) or a "
                              "cluster YAML file.")],
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON, best first.")] = False,
        top: Annotated[int, typer.Option("--top", help="Show the best N (0: all).")] = 10,
        megatron_2021: Annotated[bool, typer.Option(
            "--megatron-2021", help="Software as in Megatron-LM 2021: no FlashAttention, no "
                                    "sequence parallelism.")] = False,
) -> None:
    """Feasible (DP, TP, PP, micro-batch, ZeRO) configurations of a model on N GPUs of a
    cluster, fastest first, with predicted iteration time, PFLOP/s, MFU and memory."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.perf.llm.hardware import fabric_of
    from dlsched.perf.llm.models import resolve_model
    from dlsched.perf.llm.parallel import MEGATRON_2021, MODERN
    from dlsched.perf.llm.planner import plan

    try:
        if top < 0:  # found[:-1] would silently drop the slowest
            raise ConfigError(f"--top must be >= 0 (0: all), got {top}")
        llm = resolve_model(model)
        fabric = fabric_of(resolve_cluster(cluster))
        found = plan(llm, gpus, fabric, MEGATRON_2021 if megatron_2021 else MODERN,
                     limit=top or None)
        if not found:  # --gpus N this model cannot use, as --gpus beyond the cluster: exit 2
            raise ConfigError(no_plan_reason(llm, gpus, fabric))
    except DlschedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    rows = [row(e) for e in found]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    title = f"{llm.name} ({llm.params / 1e9:.1f}B) on {gpus} {fabric.gpu.name}: {len(found)} " \
            "shown, fastest first"
    print_uncropped(ranked_table(title, [[_cell(v) for v in r.values()] for r in rows]))


def _cell(value: float | int) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def ranked_table(title: str, cells: list[list[str]]) -> Table:
    """The plan's table, compact (no vertical rules), each column at least as wide as its
    longest value and header word: a value is never cut to "17.…" to fit the terminal."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for i, header in enumerate(_HEADERS):
        widest = max([len(word) for word in header.split()] + [len(row[i]) for row in cells])
        table.add_column(header, justify="right", min_width=widest)
    for row_cells in cells:
        table.add_row(*row_cells)
    return table


def print_uncropped(table: Table) -> None:
    """Print ``table`` on stdout at the terminal's width, or wider where its values need
    more (piped output is 80 columns to rich): the lines then wrap, but nothing is cut."""
    out = Console(emoji=False)
    needed = out.measure(table, options=out.options.update_width(10_000)).minimum
    if needed > out.width:
        out = Console(emoji=False, width=needed)
    out.print(table)


_HEADERS = ("dp", "tp", "pp", "mb", "ZeRO", "v", "recomp", "iter s", "PFLOP/s", "MFU", "GB/GPU",
            "bubble s", "DP s")


def row(estimate) -> dict[str, float | int]:  # noqa: ANN001 (an iteration.Estimate)
    c = estimate.config
    return {"dp": c.dp, "tp": c.tp, "pp": c.pp, "micro_batch": c.micro_batch,
            "zero_stage": c.zero_stage, "interleave": c.interleave, "recompute": c.recompute,
            "iteration_seconds": round(estimate.iteration_seconds, 4),
            "pflops": round(estimate.pflops, 3), "mfu": round(estimate.mfu, 4),
            "memory_gb_per_gpu": round(estimate.memory_gb_per_gpu, 2),
            "bubble_seconds": round(estimate.bubble_seconds, 4),
            "dp_seconds": round(estimate.dp_seconds, 4)}


def no_plan_reason(llm: LlmModel, gpus: int, fabric: Fabric) -> str:
    """Why the planner found nothing: no split of the GPUs at all, or none fits in memory."""
    from dlsched.perf.llm.planner import candidates

    if next(candidates(llm, gpus, fabric), None) is None:
        return (f"no way to split {count_of(gpus, 'GPU')} for {llm.name}: dp x tp x pp = "
                f"{gpus} with tp <= {fabric.gpus_per_node} (a node) dividing its {llm.heads} "
                f"heads, pp <= its {llm.layers} layers and dp x micro-batch dividing its global "
                f"batch of {llm.global_batch} sequences")
    return (f"no configuration of {llm.name} fits on {count_of(gpus, 'GPU')} ({fabric.gpu.name}, "
            f"{fabric.gpu.memory_gb:g} GB)")


def register(app: typer.Typer) -> None:
    """Add ``plan`` to the main ``dlsched`` app."""
    app.registered_commands.extend(plan_app.registered_commands)
