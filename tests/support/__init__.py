"""Helpers for the tests: loopback servers, fixtures, app launchers (imported as tests.support.X)."""
