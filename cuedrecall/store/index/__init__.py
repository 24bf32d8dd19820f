"""The in-process indexes a store keeps beside its rows: int8 vector codes with exact re-scoring
(``vector_index``, ``vector_codes``), the block arm's codes (``block_index``, ``block_scan``), the scope columns
they filter by, the mapped files they may live in, and the lock that keeps an index still while a snapshot reads
it (``locks``). Numpy only, no SQL: SQLite's store and PostgreSQL's both keep them (docs/storage.md)."""
