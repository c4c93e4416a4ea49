//! `ctxpack docs`: JSON document collections, vector search and document packs.
