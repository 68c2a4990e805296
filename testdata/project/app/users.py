"""User lookups for the demo shop."""
from app.util import fetch_json


def load_user(url, user_id):
    return fetch_json(url + "/" + str(user_id))


def load_users(url):
    return fetch_json(url)["users"]


def display_name(user):
    return user.get("name") or user["email"]
