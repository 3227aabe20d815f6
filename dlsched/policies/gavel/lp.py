"""Sparse LPs solved with HiGHS through highspy: the max-min LP that most of Gavel's policies are.

highspy (not ``scipy.optimize.linprog``) because a model kept in a solver can be changed and
re-solved from its last basis: FTF's root finding and the efficiency (second) stage of max-min
re-solve in milliseconds where a cold ``linprog`` call takes the full time again. Matrices are
kept as coordinate triplets built with numpy and handed to HiGHS in column form directly: for
POP's many small sub-problems, ``scipy.sparse`` block assembly cost more than the solves.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from dlsched.errors import DlschedError
from dlsched.lazy import highs_solver, lazy_import

highspy = lazy_import("highspy")

INF = math.inf  # highspy.kHighsInf
LARGE_LP_ROWS = 5_000  # above this a cold solve uses the interior-point method, then crossover
PARETO_SLACK = 1e-9  # the second stage keeps z >= z* (1 - slack): on the optimal face
# Where HiGHS finds that floor infeasible (its z* lies above what its tolerances let the
# second stage reach again), looser floors in turn, then the first stage's allocation.
LOOSER_SLACKS = (1e-6, 1e-4)


_COLWISE, _MINIMIZE = 1, 1  # highspy.MatrixFormat.kColwise, highspy.ObjSense.kMinimize


def _floats(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=float)


def _array(values: list[float]) -> np.ndarray:
    """A solution's list of floats as an array: the same float64s ``np.asarray`` makes,
    without its type discovery per element (~8x the instructions)."""
    return np.fromiter(values, float, len(values))


class SolverError(DlschedError):
    """HiGHS did not return an optimal solution."""


@dataclass(frozen=True)
class Entries:
    """A sparse matrix as ``(row, col, value)`` triplets (no duplicate positions)."""

    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    shape: tuple[int, int]

    def times(self, x: np.ndarray) -> np.ndarray:
        """``A @ x``."""
        return np.bincount(self.rows, self.values * x[self.cols], minlength=self.shape[0])

    def weighted_columns(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ A``."""
        return np.bincount(self.cols, self.values * weights[self.rows], minlength=self.shape[1])

    def column_form(self) -> ColumnMatrix:
        """The same matrix in compressed column form (entries of a column in their order)."""
        n_cols = self.shape[1]
        order = np.argsort(self.cols, kind="stable")
        start = np.zeros(n_cols + 1, dtype=np.int32)
        np.cumsum(np.bincount(self.cols, minlength=n_cols), out=start[1:])
        return ColumnMatrix(start, self.rows[order].astype(np.int32),
                            self.values[order].astype(float), self.shape)

    def then(self, other: Entries) -> Entries:
        """``[A, B]`` (same rows)."""
        return Entries(np.concatenate([self.rows, other.rows]),
                       np.concatenate([self.cols, other.cols + self.shape[1]]),
                       np.concatenate([self.values, other.values]),
                       (self.shape[0], self.shape[1] + other.shape[1]))


@dataclass(frozen=True)
class ColumnMatrix:
    """A sparse matrix as HiGHS takes it: column ``c``'s entries are ``start[c]:start[c + 1]``
    of ``index`` (rows, int32) and ``values``."""

    start: np.ndarray
    index: np.ndarray
    values: np.ndarray
    shape: tuple[int, int]


def stack(*blocks: Entries) -> Entries:
    """``[A; B; ...]`` (same columns)."""
    offsets = np.cumsum([0] + [block.shape[0] for block in blocks])
    return Entries(np.concatenate([b.rows + o for b, o in zip(blocks, offsets, strict=False)]),
                   np.concatenate([b.cols for b in blocks]),
                   np.concatenate([b.values for b in blocks]),
                   (int(offsets[-1]), blocks[0].shape[1]))


@dataclass(frozen=True)
class Columns:
    """LP columns (time fractions) and what each gives: normalized value to jobs, time used by
    jobs, GPUs used per type. Rows of ``value`` and ``usage`` are jobs; of ``gpus``, types."""

    value: Entries
    usage: Entries
    gpus: Entries
    # ``single_columns``' columns: each one job's value and time and one type's GPUs, in
    # (job, type) order; ``MaxMinLP`` then writes its column form directly
    single: bool = False

    @property
    def n_cols(self) -> int:
        return self.value.shape[1]

    def then(self, other: Columns) -> Columns:
        return Columns(self.value.then(other.value), self.usage.then(other.usage),
                       self.gpus.then(other.gpus))


def single_columns(value: np.ndarray, gpus: np.ndarray) -> tuple[Columns, np.ndarray, np.ndarray]:
    """One column per (job, type) with ``value[j, t] > 0``; ``gpus[j]`` GPUs while it runs.

    Returns the columns and the job and type of each column."""
    jobs, types = np.nonzero(value > 0)
    n, n_types = value.shape
    cols = np.arange(len(jobs))
    shape = (n, len(jobs))
    return (Columns(Entries(jobs, cols, value[jobs, types], shape),
                    Entries(jobs, cols, np.ones(len(jobs)), shape),
                    Entries(types, cols, gpus[jobs].astype(float), (n_types, len(jobs))),
                    single=True),
            jobs, types)


def job_classes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jobs with identical LP data (rows of ``key``): representative, class of each job, size.

    Identical jobs get identical rows in an optimal solution of a max-min or sum LP (averaging
    an optimum over them keeps it feasible and optimal), so one variable row per class is exact.
    """
    n = len(key)
    if n == 0 or key.shape[1] == 0:
        _, first, inverse, counts = np.unique(key, axis=0, return_index=True,
                                              return_inverse=True, return_counts=True)
        return first, inverse.ravel(), counts
    # ``np.unique(key, axis=0, return_index, return_inverse, return_counts)``'s answer
    # (classes in the rows' lexicographic order, each represented by its first job), from one
    # stable lexsort: np.unique views the rows as records first, which costs more here
    order = np.lexsort(key.T[::-1])
    ranked = key[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.any(ranked[1:] != ranked[:-1], axis=1, out=new[1:])
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    return order[starts], inverse, np.diff(np.append(starts, n))


def new_solver() -> object:
    """A HiGHS solver, the core class (no Python callback on every solver event), silent."""
    highs = highs_solver()
    highs.setOptionValue("output_flag", False)
    return highs


_THREAD = threading.local()


def thread_solver() -> object:
    """This thread's kept HiGHS solver (``new_solver``), for an LP that is built, solved and
    dropped before the next one on the same thread: a new solver per LP cost more than
    passing the model (a model passed in replaces the last one with its basis and solution:
    the same answers as a new solver's)."""
    highs = getattr(_THREAD, "highs", None)
    if highs is None:
        highs = _THREAD.highs = new_solver()
    return highs


class LinearProgram:
    """``min cost @ x`` s.t. ``row_lower <= A x <= row_upper`` and column bounds, kept in HiGHS so
    that changed costs, bounds or coefficients re-solve from the last basis."""

    def __init__(self, cost: np.ndarray, matrix: Entries | ColumnMatrix,
                 col_bounds: tuple[np.ndarray, ...], row_bounds: tuple[np.ndarray, ...],
                 highs: object | None = None) -> None:
        """``highs``: a solver to hold the model (``thread_solver()``: one per thread, which
        then holds no other model while this one is used), else a new one."""
        n_rows, n_cols = matrix.shape
        if isinstance(matrix, Entries):
            matrix = matrix.column_form()
        if highs is None:
            highs = new_solver()
        # a kept solver's last model may have left "simplex" (``solve``): a new one's default
        highs.setOptionValue("solver", "ipm" if n_rows > LARGE_LP_ROWS else "choose")
        self.highs = highs
        # The model as arrays (highspy's passModel of pointers): a ``HighsLp``'s fields take
        # a numpy array element by element (a numpy scalar each); every column continuous
        # (the pointer form reads ``integrality`` for every column: an empty one is not read
        # as none)
        (col_lower, col_upper), (row_lower, row_upper) = col_bounds, row_bounds
        highs.passModel(n_cols, n_rows, len(matrix.index), _COLWISE, _MINIMIZE, 0.0,
                        _floats(cost), _floats(col_lower), _floats(col_upper),
                        _floats(row_lower), _floats(row_upper), matrix.start, matrix.index,
                        _floats(matrix.values), np.zeros(n_cols, dtype=np.int32))
        self.solves = 0
        self.col_value: np.ndarray | None = None  # the last solve's, when it was optimal

    def solve(self) -> np.ndarray:
        self.col_value = None
        self.highs.run()
        self.solves += 1
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # A warm start from the last basis can stall on a badly scaled re-solve (HiGHS
            # reports "Unknown"): solve once more from scratch with the interior-point method.
            self.highs.clearSolver()
            self.highs.setOptionValue("solver", "ipm")
            self.highs.run()
            status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS: {self.highs.modelStatusToString(status)}")
        self.highs.setOptionValue("solver", "simplex")  # re-solves start from the basis
        # kept for ``StageBasis.keep`` (a solution's vector is a new list at each read)
        self.col_value = _array(self.highs.getSolution().col_value)
        return self.col_value

    @property
    def objective(self) -> float:
        return float(self.highs.getInfo().objective_function_value)

    def change_costs(self, cost: np.ndarray) -> None:
        cols = np.arange(len(cost), dtype=np.int32)
        self.highs.changeColsCost(len(cost), cols, np.asarray(cost, dtype=float))

    def change_bounds(self, col: int, lower: float, upper: float) -> None:
        self.highs.changeColBounds(col, lower, upper)

    def change_column(self, col: int, rows: np.ndarray, values: np.ndarray) -> None:
        for row, value in zip(rows.tolist(), values.tolist(), strict=True):
            self.highs.changeCoeff(row, col, value)


class MaxMinLP:
    """Maximize ``z`` s.t. ``value @ x + offset >= z_coef * z`` for every job, ``usage @ x <= 1``,
    ``gpus @ x <= capacity``, ``0 <= x <= 1`` (Gavel §4.1's max-min LP, in matrix form)."""

    def __init__(self, columns: Columns, capacity: np.ndarray, offset: np.ndarray,
                 z_coef: np.ndarray | None = None, highs: object | None = None) -> None:
        n, n_types = columns.value.shape[0], len(capacity)
        self.columns, self.n, self.z_col = columns, n, columns.n_cols
        z_coef = np.ones(n) if z_coef is None else z_coef
        matrix: Entries | ColumnMatrix
        if columns.single:
            matrix = _single_matrix(columns, n, n_types, z_coef)
        else:
            z_column = Entries(np.arange(n), np.zeros(n, dtype=np.int64), -z_coef, (n, 1))
            empty = np.zeros(0, dtype=np.int64)
            matrix = stack(columns.value.then(z_column),
                           columns.usage.then(Entries(empty, empty, np.zeros(0), (n, 1))),
                           columns.gpus.then(Entries(empty, empty, np.zeros(0), (n_types, 1))))
        cost = np.zeros(self.z_col + 1)
        cost[-1] = -1.0
        col_upper = np.append(np.ones(self.z_col), INF)
        row_lower = np.concatenate([-offset, np.full(n + n_types, -INF)])
        row_upper = np.concatenate([np.full(n, INF), np.ones(n), capacity])
        col_lower = np.zeros(self.z_col + 1)
        self.lp = LinearProgram(cost, matrix, (col_lower, col_upper), (row_lower, row_upper),
                                highs)
        # the bounds in HiGHS (``maximize_total`` raises z's lower one), for ``StageBasis``
        self.col_bounds, self.row_bounds = (col_lower, col_upper), (row_lower, row_upper)

    def solve(self) -> tuple[np.ndarray, float]:
        """The allocation columns and ``z*``."""
        solution = self.lp.solve()
        return solution[:-1], float(solution[-1])

    def set_z_coefficients(self, z_coef: np.ndarray) -> None:
        self.lp.change_column(self.z_col, np.arange(self.n), -z_coef)

    def maximize_total(self, z_floor: float, job_weights: np.ndarray | None = None,
                       first: np.ndarray | None = None) -> np.ndarray:
        """Second stage: keep ``z >= z_floor (1 - slack)`` and maximize the (weighted) sum of
        job values, so that capacity the bottleneck jobs cannot use is not left idle. Where
        HiGHS calls that infeasible, the floor is loosened (``LOOSER_SLACKS``); if it still
        is, ``first`` (the first stage's columns, still max-min optimal) is returned, or the
        error raised without it."""
        weights = np.ones(self.n) if job_weights is None else job_weights
        cost = np.append(-self.columns.value.weighted_columns(weights), 0.0)
        self.lp.change_costs(cost)
        for slack in (PARETO_SLACK, *LOOSER_SLACKS):
            self.col_bounds[0][self.z_col] = z_floor - slack * abs(z_floor)
            self.lp.change_bounds(self.z_col, self.col_bounds[0][self.z_col], INF)
            try:
                return self.lp.solve()[:-1]
            except SolverError:
                if first is None:
                    raise
        assert first is not None
        return first

    @property
    def solves(self) -> int:
        return self.lp.solves


def _single_matrix(columns: Columns, n: int, n_types: int, z_coef: np.ndarray) -> ColumnMatrix:
    """``MaxMinLP``'s matrix for ``single_columns``, in column form: the value row, time row
    and GPU row of each (job, type) column, then the z column (what ``stack`` and
    ``Entries.column_form`` give, without sorting)."""
    k = columns.n_cols
    index = np.empty(3 * k + n, dtype=np.int32)
    values = np.empty(3 * k + n)
    jobs = columns.value.rows
    index[0:3 * k:3] = jobs
    index[1:3 * k:3] = jobs + n
    index[2:3 * k:3] = columns.gpus.rows + 2 * n
    index[3 * k:] = np.arange(n)
    values[0:3 * k:3] = columns.value.values
    values[1:3 * k:3] = columns.usage.values
    values[2:3 * k:3] = columns.gpus.values
    values[3 * k:] = -z_coef
    start = np.empty(k + 2, dtype=np.int32)
    start[:k + 1] = np.arange(0, 3 * k + 1, 3)
    start[k + 1] = 3 * k + n
    return ColumnMatrix(start, index, values, (2 * n + n_types, k + 1))


class WarmStart:
    """Bases of max-min LPs solved one after another for mostly the same jobs (Gavel's
    allocation resets), kept by job for each stage (``first``: max z; ``second``: the sum at
    z's floor, ``MaxMinLP.maximize_total``): each stage of the next LP starts from its jobs'
    last statuses instead of from scratch (the first) or from the first stage's optimum (the
    second). Another start may end at another optimal vertex of a degenerate LP: an equally
    optimal allocation, not the same one."""

    def __init__(self) -> None:
        self.first, self.second = StageBasis(), StageBasis()
        self.layout: object = None  # the LP columns the bases are of, where not one per type

    def columns_are(self, layout: object) -> None:
        """Keep the bases only while the LP's columns stay ``layout`` (per (pool, type): the
        pools with jobs change, and with them what a column index means)."""
        if layout != self.layout:
            self.first, self.second, self.layout = StageBasis(), StageBasis(), layout


class StageBasis:
    """One stage's last basis, by job: its rows' statuses and its columns' by GPU type, kept
    as codes (``_LOWER``, ``_BASIC``, ``_UPPER``) read from HiGHS' basic variables and the
    solution (a nonbasic variable sits at the bound nearest its value): reading the basis as
    statuses costs a Python object per status. HiGHS takes them as an "alien" basis (any
    number of basic variables: it keeps an independent subset and fills in slacks) and skips
    presolve."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}  # each job's class in the kept LP
        self.col_of = np.zeros((0, 0), dtype=np.intp)  # (class, type): its column, or -1
        self.cols = np.zeros(0, dtype=np.intp)  # status codes, z's last
        self.rows = np.zeros(0, dtype=np.intp)  # value rows, time rows, GPU-type rows
        self.n = 0

    def start(self, lp: MaxMinLP, ids: list[str], jobs: np.ndarray, types: np.ndarray,
              n_types: int) -> None:
        """Give ``lp`` (classes represented by the jobs ``ids``; column ``c`` is class
        ``jobs[c]`` on type ``types[c]``) the kept statuses, where there are any."""
        if not self.index or self.col_of.shape[1] != n_types:
            return
        n, k, kept = len(ids), len(jobs), self.n
        old = np.fromiter(map(self.index.get, ids, repeat(-1, n)), dtype=np.intp, count=n)
        known = old >= 0
        rows = np.full(2 * n + n_types, _BASIC, dtype=np.intp)
        were = old[known]
        rows[:n][known] = self.rows[were]
        rows[n:2 * n][known] = self.rows[kept + were]
        rows[2 * n:] = self.rows[2 * kept:]
        column = np.where(known[jobs], self.col_of[old[jobs], types], -1)
        cols = np.full(k + 1, _LOWER, dtype=np.intp)
        cols[:k] = np.where(column >= 0, self.cols[column], _LOWER)
        cols[k] = self.cols[-1]
        status = _statuses()
        basis = highspy.HighsBasis()
        basis.col_status, basis.row_status = status[cols].tolist(), status[rows].tolist()
        basis.alien = basis.valid = True
        lp.lp.highs.setBasis(basis)

    def keep(self, lp: MaxMinLP, index: dict[str, int], jobs: np.ndarray, types: np.ndarray,
             n_types: int) -> None:
        """Keep ``lp``'s basis for every job (``index``: its class; ``job_index``'s, one for
        both stages: read, never written)."""
        highs = lp.lp.highs
        basic = np.asarray(highs.getBasicVariables()[1])
        values = lp.lp.col_value
        if values is None:  # (a solve that raised: HiGHS' own)
            values = np.asarray(highs.getSolution().col_value)
        self.cols = _codes(values, *lp.col_bounds, basic[basic >= 0])
        self.rows = _codes(_array(highs.getSolution().row_value), *lp.row_bounds,
                           -1 - basic[basic < 0])
        self.n = n = (len(self.rows) - n_types) // 2
        self.col_of = np.full((n, n_types), -1, dtype=np.intp)
        self.col_of[jobs, types] = np.arange(len(jobs))
        self.index = index


def job_index(ids: Sequence[str], inverse: np.ndarray) -> dict[str, int]:
    """Each job's class (``inverse``) by id, as ``StageBasis.keep`` keeps it."""
    return dict(zip(ids, inverse.tolist(), strict=True))


_LOWER, _BASIC, _UPPER = 0, 1, 2
_STATUS: list[np.ndarray] = []  # HiGHS' statuses of the codes, by code (made once)


def _statuses() -> np.ndarray:
    if not _STATUS:
        status = highspy.HighsBasisStatus
        array = np.empty(3, dtype=object)
        array[:] = [status.kLower, status.kBasic, status.kUpper]
        _STATUS.append(array)
    return _STATUS[0]


def _codes(value: np.ndarray, lower: np.ndarray, upper: np.ndarray,
           basic: np.ndarray) -> np.ndarray:
    """Status codes: ``_BASIC`` for the basic variables (or rows), else the bound nearest the
    value (every nonbasic one here has a finite bound on that side)."""
    with np.errstate(invalid="ignore"):  # inf - inf: that side is no bound
        codes = np.where(np.abs(value - lower) <= np.abs(upper - value), _LOWER, _UPPER)
    codes[basic] = _BASIC
    return codes
