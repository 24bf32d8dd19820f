import json
from tests.test_trace_readiness import *
memory, refs = coverage_store()
r = memory.recall(agent_id=AGENT, query=QUESTION, limit=5, trace=True)
t = r["trace"]
print(refs, json.dumps(t["arms"]), json.dumps(t["gate"]), t["order"])
