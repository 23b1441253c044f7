"""rclpy nodes: thin wrappers around the personal library, one per file.

Every node process prints its threads' Python stacks on SIGUSR1 (personal/stacks.py), so a node
that hangs can say where."""
from personal.stacks import enable_stack_dumps

enable_stack_dumps()
