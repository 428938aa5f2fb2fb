"""`loopfix doctor`: measure, compare guards, repair, verify and recommend, on one model.
Names are imported on first use, so the command line can read `DoctorConfig` without torch."""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

__all__ = ["DoctorConfig", "DoctorInputError", "DoctorResult", "run_doctor"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DoctorConfig": "loopfix.doctor.config",
        "DoctorInputError": "loopfix.doctor.stages",
        "DoctorResult": "loopfix.doctor.result",
        "run_doctor": "loopfix.doctor.run",
    },
)

if TYPE_CHECKING:
    from loopfix.doctor.config import DoctorConfig
    from loopfix.doctor.result import DoctorResult
    from loopfix.doctor.run import run_doctor
    from loopfix.doctor.stages import DoctorInputError
