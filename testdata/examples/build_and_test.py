# Build and test: run the project's test script through terminal() and
# parse the pass/fail counts from its output.
import json
import re
from hermes_tools import terminal

run = terminal("sh tests/test.sh 2>&1", timeout=120)
m = re.search(r"(\d+) passed, (\d+) failed", run["output"])
failures = [line[5:] for line in run["output"].splitlines() if line.startswith("FAIL ")]
print(json.dumps({"exit_code": run["exit_code"], "passed": int(m.group(1)) if m else None,
                  "failed": int(m.group(2)) if m else None, "failures": failures}, sort_keys=True))
