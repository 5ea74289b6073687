//! The sources page: each configured source, its endpoint and when it last received a delivery.
