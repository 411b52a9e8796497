"""What a GPU Python operator's function may ask of the running pipeline."""
from .operators.python_function import PythonOpsBase


def current_dali_stream() -> int:
    """The pipeline's CUDA stream (its handle) while a GPU Python operator's function runs."""
    return PythonOpsBase.current_stream().ptr
