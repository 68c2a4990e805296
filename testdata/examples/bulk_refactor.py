# Bulk refactor: find every call of the old helper and rename it in place
# with patch(..., replace_all=True), then report how many files were fixed.
import json
from hermes_tools import search_files, patch

hits = search_files(r"fetch_json\(", path="app", output_mode="files_only")
fixed = []
for path in hits["files"]:
    result = patch(path, "fetch_json(", "get_json(", replace_all=True)
    if result.get("success"):
        fixed.append(path)
    else:
        print("failed:", path, result.get("error"))

left = search_files(r"fetch_json\(", path="app", output_mode="count")
print(json.dumps({"files_fixed": len(fixed), "fixed": sorted(fixed),
                  "remaining": sum(left.get("counts", {}).values())}, sort_keys=True))
