"""What the test tiers share: helpers (``*_helpers.py``, ``in_process_judge.py``) and fixture plugins
(``*_fixtures.py``, registered by the root conftest). Nothing here is collected as a test."""
