from hermes_tools import search_files
r = search_files("TODO", path=".", file_glob="*.py")
print(sorted((m["path"].split("/")[-1], m["line"]) for m in r["matches"]))
