//! The typed metrics snapshot every roam process hands out.
