"""Problem formats (SOL-ExecBench / FlashInfer-Trace compatible), the bundled catalogue and its tooling.

Nothing here imports torch at module level: the MCP server reads problems without loading it.
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
