"""The processing state: which captured units still need the Gate, derived from a tree."""
