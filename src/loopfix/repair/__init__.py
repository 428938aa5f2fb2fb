"""Weight repair: matched branches -> probe -> directions -> candidate column edits -> proxy
search -> activation-level causal check -> verification by generation -> a reversible patch."""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

__all__ = ["RepairConfig", "RepairInputError", "RepairResult", "RepairSource", "run_repair"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RepairConfig": "loopfix.repair.config",
        "RepairInputError": "loopfix.repair.errors",
        "RepairResult": "loopfix.repair.result",
        "RepairSource": "loopfix.repair.sources",
        "run_repair": "loopfix.repair.pipeline",
    },
)

if TYPE_CHECKING:
    from loopfix.repair.config import RepairConfig
    from loopfix.repair.errors import RepairInputError
    from loopfix.repair.pipeline import run_repair
    from loopfix.repair.result import RepairResult
    from loopfix.repair.sources import RepairSource
