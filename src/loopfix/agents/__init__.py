"""Stuck agents: trajectories read into steps (`readers`), the rule that finds a run of steps
repeating without progress (`detector`), and the published rules of other harnesses as
baselines (`baselines`). docs/agents.md."""

from loopfix.agents.detector import KINDS, AgentConfig, AgentVerdict, Kind, detect_stuck
from loopfix.agents.readers import TrajectoryError, openai_steps, sniff, trajectory_of
from loopfix.agents.steps import Step, Trajectory

__all__ = [
    "KINDS",
    "AgentConfig",
    "AgentVerdict",
    "Kind",
    "Step",
    "Trajectory",
    "TrajectoryError",
    "detect_stuck",
    "openai_steps",
    "sniff",
    "trajectory_of",
]
