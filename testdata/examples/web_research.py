# Multi-step web research: search, extract each result, print summaries.
# Without a configured provider, web_search returns an error dict (it does
# not raise), and the script reports it.
import json
from hermes_tools import web_search, web_extract

query = "WebAssembly sandboxing for Python"
found = web_search(query, limit=5)
if not found.get("success"):
    print(json.dumps({"searched": False, "error": found.get("error")}))
else:
    results = found["data"]["web"]
    pages = web_extract([r["url"] for r in results])["results"] if results else []
    summaries = []
    for hit, page in zip(results, pages):
        text = page["content"] or ""
        # The first paragraph that is prose, not a heading or a link list.
        para = next((p.strip() for p in text.split("\n\n")
                     if len(p.strip()) > 40 and not p.lstrip().startswith(("#", "-", "*", "["))), "")
        summaries.append({
            "position": hit["position"],
            "url": page["url"],
            "title": page["title"] or hit["title"],
            "summary": para[:200],
            "chars": len(text),
            "error": page["error"],
        })
    print(json.dumps({"searched": True, "query": query, "pages": summaries}, indent=2))
