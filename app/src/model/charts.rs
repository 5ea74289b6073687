//! Series the dashboard's charts draw: volume and errors over time, a destination's success rate and latency.
