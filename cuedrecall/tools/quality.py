"""The retrieval-quality tools: calibrate an agent's gate and set its precision."""

from __future__ import annotations

from cuedrecall.access import READ, WRITE
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers import calibrate
from cuedrecall.recall.calibration import PRECISION_BETA
from cuedrecall.tools.bounds import shown
from cuedrecall.tools.common import AGENT, NAME_MAX, SESSION_KEY
from cuedrecall.tools.spec import Param, Tool, on_agent


def _percentile_within(name: str, value: float) -> None:
    """0 to 100 (0 the default, above 1 a percent), in the words CPersona's clients look for."""
    if not 0 <= value <= 100:
        raise ToolArgumentError(
            f"argument '{name}': percentile must be in 0 to 1 (a quantile; 0 = 0.95) or 1 to 100 (a percent), "
            f"got {shown(value)}"
        )


def _precision_known(name: str, value: str) -> None:
    """A named precision, in the words CPersona's clients look for."""
    if value and value not in PRECISION_BETA:
        raise ToolArgumentError(
            f"argument '{name}': Unknown precision {shown(value)}; expected strict, balanced or lenient"
        )


TOOLS = [
    Tool(
        "calibrate_threshold",
        "Set the agent's quality gate from its scores: after a few hundred memories, or when recall returns too "
        "much or too little.",
        {
            "agent_id": Param("string", 'the agent; "" = the global threshold', required=True, max_length=NAME_MAX),
            "sample_size": Param(
                "integer", "memories sampled (0 = 200)", default=200, minimum=0, maximum=5000, clamp=True
            ),
            "method": Param(
                "string", "how it is chosen", default="separation", enum=("separation", "percentile", "zscore")
            ),
            "percentile": Param(
                "number",
                "for percentile: the unrelated pairs' quantile (0 = 0.95; over 1 a percent)",
                default=0.95,
                refine=_percentile_within,
                extra={"minimum": 0, "maximum": 100},
            ),
            "z_factor": Param(
                "number",
                "for zscore: deviations above the unrelated mean (0 = 1)",
                default=1.0,
                minimum=-10,
                maximum=10,
                clamp=True,
            ),
            "session_key": SESSION_KEY,
        },
        calibrate.calibrate_threshold,
        on_agent(WRITE),
        paused=calibrate.paused_calibration,
    ),
    Tool(
        "set_recall_precision",
        "Make the agent's gate stricter (fewer, surer rows) or more lenient, and recalibrate; neither argument "
        "clears it.",
        {
            "agent_id": AGENT,
            "precision": Param(
                "string",
                "strict, balanced or lenient",
                default="",
                max_length=NAME_MAX,
                refine=_precision_known,
                extra={"enum": ["", *PRECISION_BETA]},
            ),
            "beta": Param(
                "number",
                "your own weight instead (strict 2, lenient 0.5)",
                default=0,
                minimum=0,
                maximum=100,
            ),
            "session_key": SESSION_KEY,
        },
        calibrate.set_recall_precision,
        on_agent(WRITE),
        paused=calibrate.paused_precision,
    ),
    Tool(
        "get_recall_precision",
        "The agent's gate precision and calibrated thresholds.",
        {"agent_id": AGENT},
        calibrate.get_recall_precision,
        on_agent(READ),
        read_only=True,
    ),
]
