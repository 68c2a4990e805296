# Multi-step web research: search, extract each result, print summaries.
# Without a configured provider, web_search returns an error dict (it does
# not raise), and the script reports it.
import json
from hermes_tools import web_search, web_extract

found = web_search("WebAssembly sandboxing for Python", limit=5)
if not found.get("success"):
    print(json.dumps({"searched": False, "error": found.get("error")}))
else:
    urls = [r["url"] for r in found["data"]["web"]]
    pages = web_extract(urls[:5])["results"]
    print(json.dumps([{"url": p["url"], "title": p["title"], "chars": len(p["content"] or "")}
                      for p in pages], indent=2))
