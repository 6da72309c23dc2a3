"""Headless pipeline: decode, filter, encode many files safely, with progress and a report."""
