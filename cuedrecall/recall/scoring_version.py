"""The scoring version: raised whenever fusion, scoring or the gate changes what a score means.

Calibrated thresholds carry it; a change makes the server recalibrate at start.
"""

SCORING_VERSION = "cuedrecall-4-joined-pass"
RRF_K = 15  # the reciprocal-rank constant the version's scores are on by default (CUEDRECALL_RRF_K)


def fingerprint(far_weight: float, rrf_k: int = RRF_K) -> str:
    """The version plus every setting that changes score scales: the far arm's weight and the rrf constant (an
    rrf vote is 1 / (k + rank + 1), so a threshold measured at one k means another at another)."""
    out = SCORING_VERSION if far_weight == 1.0 else f"{SCORING_VERSION}+far_weight={far_weight:g}"
    return out if rrf_k == RRF_K else f"{out}+rrf_k={rrf_k}"
