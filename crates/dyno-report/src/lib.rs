//! dyno-report (being written).
