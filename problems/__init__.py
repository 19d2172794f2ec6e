"""Problem formats (SOL-ExecBench / FlashInfer-Trace compatible), the bundled catalogue and its tooling.

Nothing here imports torch at module level: the MCP server reads problems without loading it. Every other
package depends on this one, and it depends on none of them. ::

    definition.py, workload.py, solution.py, trace.py
                    the four file formats (base.py: what they share; dtypes.py: the dtypes a definition names)
    load.py         reading and writing problem folders and solution files, the catalogue's names
    expr.py         the arithmetic of axes, constraints and speed-of-light overrides, evaluated safely
    inputs.py, random_inputs.py
                    seeded inputs for one workload: the descriptors, and the values of random ones
    reference.py    executing a definition's reference source (trusted processes only)
    config.py       every SOLFORGE_* setting, the cache folder and the agent-name rule, read in one place
    errors.py       the one exception family (SolforgeError and its children)
    files.py        atomic file writes, for caches that several processes share
    catalogue/      the bundled problems; generator/ makes them from model configs, baselines/ ships their
                    measured baselines and speed-of-light counts
    importers/      SOL-ExecBench folders, FlashInfer-Trace sets and KernelBench files, and the exporter
"""

from .definition import Axis, Category, ConstAxis, Definition, ExprAxis, SolOverride, TensorSpec, VarAxis
from .dtypes import DType
from .errors import ExpressionError, FormatError, InfrastructureError, ProblemNotFound, SolforgeError
from .load import (
    CATALOGUE_DIR,
    Problem,
    catalogue_names,
    iter_catalogue,
    load_problem,
    load_problem_folder,
    load_solution,
    parse_solution,
    tables_dir,
    write_problem_folder,
)
from .solution import BuildSpec, CompileOptions, Language, Solution, SourceFile, reference_solution
from .trace import Correctness, Environment, Evaluation, Performance, Status, Trace
from .workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Tolerance, Workload

__all__ = [
    "CATALOGUE_DIR",
    "Axis",
    "BuildSpec",
    "Category",
    "CompileOptions",
    "ConstAxis",
    "Correctness",
    "CustomInput",
    "DType",
    "Definition",
    "Environment",
    "Evaluation",
    "ExprAxis",
    "ExpressionError",
    "FormatError",
    "InfrastructureError",
    "Language",
    "Performance",
    "Problem",
    "ProblemNotFound",
    "RandomInput",
    "SafetensorsInput",
    "ScalarInput",
    "SolOverride",
    "SolforgeError",
    "Solution",
    "SourceFile",
    "Status",
    "TensorSpec",
    "Tolerance",
    "Trace",
    "VarAxis",
    "Workload",
    "catalogue_names",
    "iter_catalogue",
    "load_problem",
    "load_problem_folder",
    "load_solution",
    "parse_solution",
    "reference_solution",
    "tables_dir",
    "write_problem_folder",
]
