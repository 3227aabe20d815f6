"""Gavel's policies as LPs (Narayanan et al., OSDI'20) and POP partitioning (SOSP'21).

The solver layer: ``problem`` (the allocation problem, its result, feasibility checks),
``inputs`` (``from_gavel``), ``lp`` (HiGHS models), one module per family of objectives
(``fairness``, ``packed`` with ``pairing``, ``ftf``, ``efficiency``; ``objectives`` gathers
them and their scores) and ``pop``. Nothing is imported here: the policy registry imports this
package on start-up, and the solver modules pull in HiGHS only when used.
"""
