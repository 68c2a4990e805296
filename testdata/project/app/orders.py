"""Order handling for the demo shop."""
from app.util import fetch_json


def load_orders(url):
    return fetch_json(url)["orders"]


def total(orders):
    return sum(o["amount"] for o in orders)
