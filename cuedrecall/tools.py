"""The tool surface, declared once: names, arguments, descriptions and JSON Schemas.

The API validates every call against these declarations and the MCP server
publishes them, so the two can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuedrecall.errors import ToolArgumentError

_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}
_MISSING = object()


@dataclass(frozen=True)
class Param:
    """One argument: its JSON type, whether it is required, its default and bounds."""

    type: str
    doc: str
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[str, ...] = ()
    max_length: int | None = None
    non_empty: bool = False  # a required string that must hold more than whitespace
    nullable: bool = False
    items: str | None = None  # JSON type of array items

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": [self.type, "null"] if self.nullable else self.type, "description": self.doc}
        for key, value in (("minimum", self.minimum), ("maximum", self.maximum), ("maxLength", self.max_length)):
            if value is not None:
                out[key] = value
        if self.enum:
            out["enum"] = list(self.enum)
        if self.items:
            out["items"] = {"type": self.items}
        if self.default is not None:
            out["default"] = self.default
        return out

    def check(self, name: str, value: Any) -> Any:
        """The value when it is acceptable, else ToolArgumentError naming the argument."""
        if value is None and self.nullable:
            return None
        expected = _JSON_TYPES[self.type]
        if isinstance(value, bool) and self.type in ("integer", "number"):
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got a boolean")
        if not isinstance(value, expected):
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got {_json_type(value)}")
        if self.non_empty and isinstance(value, str) and not value.strip():
            raise ToolArgumentError(f"argument '{name}' must not be empty")
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got {value}")
        if self.enum and value not in self.enum:
            raise ToolArgumentError(f"argument '{name}' must be one of {', '.join(self.enum)}, got {value!r}")
        if self.max_length is not None and len(value) > self.max_length:
            raise ToolArgumentError(f"argument '{name}' is too long ({len(value)}, at most {self.max_length})")
        if self.items and any(not isinstance(v, _JSON_TYPES[self.items]) for v in value):
            raise ToolArgumentError(f"argument '{name}' must be an array of {self.items}s")
        return value

    def _kind(self) -> str:
        word = {"integer": "an integer", "number": "a number", "object": "an object", "array": "an array"}
        kind = word.get(self.type, f"a {self.type}")
        if self.minimum is not None and self.maximum is not None:
            kind += f" from {self.minimum:g} to {self.maximum:g}"
        elif self.minimum is not None:
            kind += f" of at least {self.minimum:g}"
        return kind


def _json_type(value: Any) -> str:
    for name, kind in (("null", type(None)), ("a boolean", bool), ("an integer", int), ("a number", float),
                       ("a string", str), ("an object", dict), ("an array", list)):
        if isinstance(value, kind):
            return name
    return type(value).__name__


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: dict[str, Param]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {name: p.schema() for name, p in self.params.items()},
            "required": [name for name, p in self.params.items() if p.required],
            "additionalProperties": False,
        }

    def bind(self, arguments: Any) -> dict[str, Any]:
        """Validated arguments with defaults filled in; the first problem raises ToolArgumentError."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"arguments of '{self.name}' must be an object, got {_json_type(arguments)}")
        unknown = sorted(set(arguments) - set(self.params))
        if unknown:
            raise ToolArgumentError(
                f"unknown argument(s) for '{self.name}': {', '.join(unknown)} "
                f"(accepted: {', '.join(self.params)})"
            )
        bound = {}
        for name, param in self.params.items():
            value = arguments.get(name, _MISSING)
            if value is _MISSING:
                if param.required:
                    raise ToolArgumentError(f"argument '{name}' is required: {param.doc}")
                bound[name] = param.default
            else:
                bound[name] = param.check(name, value)
        return bound


AGENT = Param("string", "the agent whose memory this is", required=True, non_empty=True, max_length=256)
AGENT_OR_ALL = Param("string", "the agent; \"\" for every agent", default="", max_length=256)
PROJECT_WRITE = Param("string", "project to file under; \"\" = the global pool", default="")
PROJECT_READ = Param(
    "string", "omit for every project; \"\" = the global pool only; \"X\" = project X and the global pool",
    nullable=True,
)
CHANNEL_WRITE = Param("string", "channel to file under; \"\" = shared by every channel", default="")
CHANNEL_READ = Param("string", "\"\" = every channel; \"C\" = channel C and the shared channel", default="")
SOURCE_ID = Param("string", "only memories whose source id starts with this", default="")
TIME_CUE = Param(
    "object",
    "only when the request itself names a time: {after?, before?} (dates or ISO-8601) or "
    "{ago: {unit: days|weeks|months, value} | \"long_ago\"}, with confidence sure|likely|vague (required)",
    nullable=True,
)


def _tool(name: str, description: str, read_only: bool = False, destructive: bool = False,
          idempotent: bool = False, **params: Param) -> Tool:
    return Tool(name, description, params, read_only, destructive, idempotent)


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        _tool(
            "store",
            "Save one message to long-term memory: a fact, decision, preference or conversation turn worth "
            "recalling later. Call it when something is said that a future session should know. Storing the "
            "same msg_id or the same text again is skipped, never duplicated.",
            idempotent=True,
            agent_id=AGENT,
            message=Param(
                "object",
                "{content (required), id (your message id, for dedup), source ({type: User|Agent|System, id, "
                "name} or a string), timestamp (ISO-8601 time of the event; default now), metadata (object)}",
                required=True,
            ),
            channel=CHANNEL_WRITE,
            project_id=PROJECT_WRITE,
        ),
        _tool(
            "recall",
            "Search long-term memory for what is relevant to a query (hybrid: meaning, words and identifiers). "
            "Call it before answering anything that may depend on earlier sessions. The answer's rows run "
            "from worst to best: the LAST row is the best match. An empty query lists the newest memories. "
            "Pass time_cue only when the request itself names a time (\"in March\", \"two weeks ago\"); never "
            "fill it with today's date. A cue moves rows found in that period up by a few places at most and "
            "may add up to 3 rows; it never removes one.",
            read_only=True,
            agent_id=AGENT,
            query=Param("string", "what to look for; \"\" lists the newest memories", required=True, max_length=16000),
            limit=Param("integer", "rows to return", default=10, minimum=0, maximum=100),
            deep=Param("boolean", "lower the quality gate (halved) to find weaker matches", default=False),
            channel=CHANNEL_READ,
            project_id=PROJECT_READ,
            source_id=SOURCE_ID,
            exclude_contents=Param("array", "texts already in context: rows equal to (or, from 32 chars, "
                                   "starting with) one of them are left out", default=[], items="string"),
            full_content=Param("boolean", "return whole rows instead of 500-character previews", default=False),
            trace=Param("boolean", "also return the recall trace: what every stage kept, dropped and why "
                        "(refs and scores, never text)", default=False),
            time_cue=TIME_CUE,
        ),
        _tool(
            "get_contents",
            "Read the full text of records a recall returned as previews: pass their refs (mem:<id>, ep:<id>).",
            read_only=True,
            agent_id=AGENT,
            refs=Param("array", "up to 20 refs such as \"mem:12\" or \"ep:3\"", required=True, items="string"),
        ),
        _tool(
            "archive_episode",
            "Save a summary of a finished session or task as an episode, so later recalls can find the whole "
            "episode. Call it at the end of a conversation with your own summary; history (the turns, with "
            "timestamps) only sets the episode's start and end time.",
            agent_id=AGENT,
            summary=Param("string", "your summary of the episode", required=True, non_empty=True),
            keywords=Param("string", "space-separated keywords", default=""),
            history=Param("array", "the turns [{timestamp, ...}], used for start/end time", default=[], items="object"),
            start_time=Param("string", "ISO-8601 start (overrides history)", nullable=True),
            end_time=Param("string", "ISO-8601 end (overrides history)", nullable=True),
            resolved=Param("boolean", "whether the episode's matter is settled", default=False),
            channel=CHANNEL_WRITE,
            project_id=PROJECT_WRITE,
        ),
        _tool(
            "update_memory",
            "Correct the text of one stored memory (re-embedded). Use it when a stored fact changed.",
            idempotent=True,
            memory_id=Param("integer", "the memory's id (from its ref mem:<id>)", required=True, minimum=1),
            content=Param("string", "the new text", required=True, non_empty=True),
            agent_id=Param("string", "when given, the memory must belong to this agent", default=""),
        ),
        _tool(
            "delete_memory",
            "Delete one memory for good. Use it when the user asks to forget something.",
            destructive=True, idempotent=True,
            memory_id=Param("integer", "the memory's id", required=True, minimum=1),
            agent_id=Param("string", "when given, the memory must belong to this agent", default=""),
        ),
        _tool(
            "delete_episode",
            "Delete one episode for good.",
            destructive=True, idempotent=True,
            episode_id=Param("integer", "the episode's id", required=True, minimum=1),
            agent_id=Param("string", "when given, the episode must belong to this agent", default=""),
        ),
        _tool(
            "list_memories",
            "Browse stored memories, newest first (no search). Use recall to search.",
            read_only=True,
            agent_id=AGENT_OR_ALL,
            limit=Param("integer", "rows to return", default=100, minimum=0, maximum=500),
            project_id=PROJECT_READ,
        ),
        _tool(
            "list_episodes",
            "Browse stored episodes, newest first.",
            read_only=True,
            agent_id=AGENT_OR_ALL,
            limit=Param("integer", "rows to return", default=50, minimum=0, maximum=200),
            project_id=PROJECT_READ,
        ),
        _tool(
            "get_profile",
            "Read the agent's profile: standing facts about the user and the agent.",
            read_only=True,
            agent_id=AGENT,
        ),
        _tool(
            "update_profile",
            "Replace the agent's profile (at most 2000 characters). Keep it to standing facts.",
            idempotent=True,
            agent_id=AGENT,
            profile=Param("string", "the whole new profile", required=True),
        ),
        _tool(
            "calibrate_threshold",
            "Measure this agent's score distributions and set its quality gate, one threshold per signal "
            "(cosine, and the fused score of rows only the word arms found). Run it after importing or "
            "storing a few hundred memories, or when recalls return too much or too little.",
            agent_id=Param("string", "the agent; \"\" calibrates the global cosine threshold", required=True,
                           max_length=256),
            sample_size=Param("integer", "memories to sample", default=200, minimum=10, maximum=5000),
            method=Param("string", "how the threshold is chosen", default="separation",
                         enum=("separation", "percentile", "zscore")),
            percentile=Param("number", "quantile of unrelated pairs, for method percentile", default=0.95,
                             minimum=0.01, maximum=1.0),
            z_factor=Param("number", "standard deviations above the unrelated mean, for method zscore",
                           default=1.0, minimum=-10, maximum=10),
        ),
        _tool(
            "set_recall_precision",
            "Make the agent's gate stricter (fewer, surer rows) or more lenient (more rows), then recalibrate.",
            agent_id=AGENT,
            precision=Param("string", "strict, balanced or lenient", required=True,
                            enum=("strict", "balanced", "lenient")),
        ),
        _tool(
            "get_recall_precision",
            "Read the agent's gate precision and its calibrated thresholds.",
            read_only=True,
            agent_id=AGENT,
        ),
        _tool(
            "export_memories",
            "Write an agent's memories, episodes and profile to a JSONL file (a backup or a move).",
            destructive=True,
            agent_id=AGENT_OR_ALL,
            output_path=Param("string", "file to write", required=True, non_empty=True),
            include_embeddings=Param("boolean", "also write the vectors", default=False),
        ),
        _tool(
            "import_memories",
            "Load a JSONL export. Importing the same file twice changes nothing.",
            input_path=Param("string", "file to read", required=True, non_empty=True),
            target_agent_id=Param("string", "file every record under this agent (\"\" keeps each record's)", default=""),
            dry_run=Param("boolean", "count what would be imported without writing", default=False),
        ),
    ]
}
