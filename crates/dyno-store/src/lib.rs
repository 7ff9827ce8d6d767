//! dyno-store (being written).
