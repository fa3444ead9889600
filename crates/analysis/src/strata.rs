//! Stratification. (in progress)
