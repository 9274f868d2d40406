"""Secret detection: pure functions over text, shared by capture (redaction before a
blob exists), the Gate contract and the secrets hook."""
