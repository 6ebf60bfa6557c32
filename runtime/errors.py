"""`triton.runtime.errors`' names: `OutOfResources` (a LaunchError here) and the interpreter's error."""
from ..errors import InterpreterError, OutOfResources

__all__ = ["OutOfResources", "InterpreterError"]
