//! Failures grouped by cause (problems), their states, and what resolves a failure.
