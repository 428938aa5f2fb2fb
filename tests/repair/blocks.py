"""Temperature blocks shaped like `Verifier.full`'s, built from counts, for the acceptance
rules' tests (`loopfix.repair.decide`). Import as `from tests.repair.blocks import block`."""

from loopfix.scan.stats import mcnemar_exact


def paired(rescues: int, regressions: int, removed: int = 40, added: int = 10) -> dict:
    return {
        "pairs": 400,
        "rescues": rescues,
        "regressions": regressions,
        "mcnemar_p": mcnemar_exact(rescues, regressions),
        "loops_removed": removed,
        "loops_added": added,
        "loop_mcnemar_p": mcnemar_exact(removed, added),
    }


def block(
    base: float,
    patched: float,
    controls: list[float],
    removed: int = 40,
    added: int = 10,
    answers: tuple[int, int] = (5, 3),
    control_answers: tuple[int, int] = (2, 2),
) -> dict:
    def arm(loop_rate: float, accuracy: float = 0.5) -> dict:
        return {"loop_rate": loop_rate, "accuracy": accuracy, "n": 400}

    patched_pairs = paired(*answers, removed, added)
    return {
        "base": arm(base),
        "patched": arm(patched),
        "random_control": arm(controls[0]),
        "controls": [arm(c) for c in controls],
        "paired": {"patched": patched_pairs, "random_control": paired(*control_answers)},
        "paired_controls": [paired(*control_answers) for _ in controls],
    }
