"""Shared helpers."""
import json
import urllib.request


def fetch_json(url):
    with urllib.request.urlopen(url) as r:
        return json.load(r)
