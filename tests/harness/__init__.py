"""What the Python suites share: how a suite closes (harness.verdict)."""
