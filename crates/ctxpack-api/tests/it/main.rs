//! Tests of the API, run in process.

mod select;
