"""The hidden-state tier for text: a probe over a scorer model's pooled hidden states, combined
with the text tiers ("detector OR probe"); docs/states.md.

Importing this package loads no torch; computing features (`features.py`,
`probe_probabilities`) does.
"""

from loopfix.states.probe import (
    DECIDED_BY,
    SHIPPED_PROBE,
    ProbeProvenance,
    StateProbe,
    combined_verdict,
    load_probe,
    probe_probabilities,
)

__all__ = [
    "DECIDED_BY",
    "SHIPPED_PROBE",
    "ProbeProvenance",
    "StateProbe",
    "combined_verdict",
    "load_probe",
    "probe_probabilities",
]
