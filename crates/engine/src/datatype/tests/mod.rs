//! Unit tests of the datatype engine, checked against a naive typemap model.

mod basic_tests;
mod contents_tests;
mod count_tests;
mod extent_tests;
mod oracle;
mod pack_tests;
mod prop_tests;
