"""Weight repair: matched branches -> probe -> directions -> candidate column edits -> proxy
search -> activation-level causal check -> verification by generation -> a reversible patch."""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

__all__ = ["RepairConfig", "RepairInputError", "run_repair"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RepairConfig": "loopfix.repair.config",
        "RepairInputError": "loopfix.repair.errors",
        "run_repair": "loopfix.repair.pipeline",
    },
)

if TYPE_CHECKING:
    from loopfix.repair.config import RepairConfig
    from loopfix.repair.errors import RepairInputError
    from loopfix.repair.pipeline import run_repair
