//! Unit tests of the datatype engine.
