"""``habitat_sim.utils`` of the contract fake: only ``common`` (src_python/habitat_sim/utils/)."""
from . import common  # noqa: F401
