"""`loopfix doctor`: measure, compare guards, repair, verify and recommend, on one model."""

from loopfix.doctor.config import GUARDS, QUICK, QUICK_GUARDS, SIZES, DoctorConfig
from loopfix.doctor.recommend import recommend
from loopfix.doctor.result import (
    DoctorResult,
    GuardStage,
    MeasureSetting,
    MeasureStage,
    Recommendation,
    RepairStage,
    StageCost,
)
from loopfix.doctor.run import run_doctor
from loopfix.doctor.stages import DoctorInputError, doctor_repair_config

__all__ = [
    "GUARDS",
    "QUICK",
    "QUICK_GUARDS",
    "SIZES",
    "DoctorConfig",
    "DoctorInputError",
    "DoctorResult",
    "GuardStage",
    "MeasureSetting",
    "MeasureStage",
    "Recommendation",
    "RepairStage",
    "StageCost",
    "doctor_repair_config",
    "recommend",
    "run_doctor",
]
