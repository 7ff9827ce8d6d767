//! dyno-tango (being written).
