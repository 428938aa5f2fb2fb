"""Weight repair: matched branches -> probe -> directions -> candidate column edits -> proxy
search -> activation-level causal check -> verification by generation -> a reversible patch."""

from loopfix.repair.branches import BranchPair, make_pairs, normal_walks
from loopfix.repair.candidates import Candidate, candidate_grid, norm_matched_control
from loopfix.repair.config import RepairConfig
from loopfix.repair.directions import LayerDirections, random_directions
from loopfix.repair.errors import RepairInputError
from loopfix.repair.pipeline import find_directions, rank_candidates, run_repair
from loopfix.repair.replay import PrefixCache
from loopfix.repair.scan_branches import loop_location, normal_texts, scan_pairs
from loopfix.repair.scan_records import ScanRecords, read_records, split_prompts
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.verify import Outcomes, compare_outcomes, generate_outcomes

__all__ = [
    "BranchPair",
    "Candidate",
    "LayerDirections",
    "Outcomes",
    "PrefixCache",
    "ProxyScore",
    "RepairConfig",
    "RepairInputError",
    "ScanRecords",
    "Scorer",
    "candidate_grid",
    "compare_outcomes",
    "find_directions",
    "generate_outcomes",
    "loop_location",
    "make_pairs",
    "norm_matched_control",
    "normal_texts",
    "normal_walks",
    "random_directions",
    "rank_candidates",
    "read_records",
    "run_repair",
    "scan_pairs",
    "split_prompts",
]
