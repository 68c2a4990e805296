"""Inventory package."""
VERSION = "3.0"
