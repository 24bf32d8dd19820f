"""The scoring version: raised whenever fusion, scoring or the gate changes what a score means.

Calibrated thresholds carry it; a change makes the server recalibrate at start.
"""

SCORING_VERSION = "cuedrecall-1-per-signal-gate"


def fingerprint(far_weight: float) -> str:
    """The version plus every setting that changes score scales."""
    return SCORING_VERSION if far_weight == 1.0 else f"{SCORING_VERSION}+far_weight={far_weight:g}"
