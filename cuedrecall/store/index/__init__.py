"""The in-process indexes a store keeps beside its rows: int8 vector codes with exact re-scoring
(``vector_index``, ``vector_codes``), the block arm's codes (``block_index``, ``block_scan``), the scope columns
they filter by and the mapped files they may live in. Numpy only, no SQL: SQLite's store and PostgreSQL's both
keep them (docs/storage.md)."""
