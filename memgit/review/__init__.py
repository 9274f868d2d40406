"""Review: runs a policy holds back are proposed on branches, then approved or rejected."""
