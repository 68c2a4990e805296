# differs: the sandbox has no network
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://192.0.2.1/", timeout=2)
except (urllib.error.URLError, OSError) as e:
    print("no network:", type(e).__name__)
