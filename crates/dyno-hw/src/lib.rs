//! dyno-hw (being written).
