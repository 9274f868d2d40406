"""The Gate: a model proposes memories, code verifies them against the evidence."""
