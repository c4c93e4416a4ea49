//! JSON document collections in the store: documents with `_id`, and their embeddings.
