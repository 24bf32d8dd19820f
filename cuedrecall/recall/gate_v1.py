"""Constants of the gate policy gate-v1 (issue 13): the gate from the first memory, and gate relief.

Every number and word list here is part of the policy version, recorded in the
trace's policy.gate: changing one is a new policy, not a tuning knob.
"""

from __future__ import annotations

from typing import Final

# policy.gate in the trace.
POLICY: Final = "gate-v1"

# Common words: a lexical arm's match on these alone is no evidence. English function words of three letters or
# more (the trigram index ignores shorter ones), and their common contractions. A term made only of hiragana is
# common too (particles and endings: の移行 is not, について is); see ``gate.common_word``.
COMMON_WORDS: Final = frozenset("""
    about above across after again against all also although among and any anybody anyone anything are aren't around
    as because been before being below between both but can can't cannot could couldn't did didn't does doesn't
    doing don't done during each either else even ever every for from further had hadn't has hasn't have haven't
    having her here hers herself him himself his how however i'd i'll i'm i've into isn't it's its itself just let's
    might mine must my myself neither never nor not now off once only onto our ours ourselves out over own per quite
    rather really shall she should shouldn't since some somebody someone something still such than that that's the
    their theirs them themselves then there there's these they they'd they'll they're they've this those though
    through thus till too toward towards under until upon very via was wasn't we'd we'll we're we've were weren't
    what what's whatever when where where's whether which while who who's whoever whom whose why will with within
    without won't would wouldn't yet you you'd you'll you're you've your yours yourself
""".split())

# The pool's typical cosine: a vector match that stands this many standard deviations above the query's mean
# cosine over the whole pool clears the gate even when the pool-size heuristic (tuned for big pools) or an
# automatic calibration (measured between stored memories, not between a question and a memory) is higher. Only
# in pools below OUTLIER_MAX_POOL, where the heuristic is above its floor and the query's cosine over every row is
# one small product; never below the heuristic's own floor.
OUTLIER_Z: Final = 2.0
OUTLIER_MAX_POOL: Final = 500
HEURISTIC_FLOOR: Final = 0.2  # heuristic_minimum of a pool of 500 or more

# Gate relief (docs/recall-process.md#gate-relief-relief-v1): one bounded step.
# A row the gate refused below its threshold is "just under" when its
# score is at least RELIEF_STEP of that threshold (on the signal nearest to passing). FILTER_DROP is suspected
# when at least RELIEF_SUSPECT rows sit just under while the answer has an empty place; relief then fills at
# most RELIEF_ROWS of the empty places (never beyond the limit), and a cue's seats may take its period's rows
# just under the gate.
RELIEF_STEP: Final = 0.8
RELIEF_SUSPECT: Final = 2
RELIEF_ROWS: Final = 3
