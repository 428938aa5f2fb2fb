"""Weight repair: matched branches -> probe -> directions -> candidate column edits -> proxy
search -> activation-level causal check -> verification by generation -> a reversible patch."""

from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.pipeline import run_repair

__all__ = ["RepairConfig", "RepairInputError", "run_repair"]
