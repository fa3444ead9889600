//! Fact files.
