//! dyno-stats (being written).
