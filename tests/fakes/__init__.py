"""Tests of the fakes themselves (testkit/): a fake that drifts from what it stands in for proves nothing."""
