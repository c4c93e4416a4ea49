//! A tiny ring buffer used as a sample for token counting.
//!
//! This file is test data; it is never compiled as part of the crate.

use std::collections::HashMap;
use std::fmt::{self, Display};

/// Fixed-capacity FIFO that overwrites the oldest element when full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring<T> {
    buf: Vec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T: Clone> Ring<T> {
    /// Creates an empty ring with room for `capacity` items.
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0, "capacity must be non-zero");
        Self { buf: vec![None; capacity], head: 0, len: 0 }
    }

    /// Pushes `value`, returning the evicted element if the ring was full.
    pub fn push(&mut self, value: T) -> Option<T> {
        let cap = self.buf.len();
        let idx = (self.head + self.len) % cap;
        if self.len == cap {
            let old = self.buf[self.head].replace(value);
            self.head = (self.head + 1) % cap;
            old
        } else {
            self.buf[idx] = Some(value);
            self.len += 1;
            None
        }
    }

    /// Removes and returns the oldest element.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let out = self.buf[self.head].take();
        self.head = (self.head + 1) % self.buf.len();
        self.len -= 1;
        out
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(move |i| self.buf[(self.head + i) % self.buf.len()].as_ref())
    }
}

impl<T: Display + Clone> Display for Ring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{item}")?;
        }
        write!(f, "]")
    }
}

fn word_histogram(text: &str) -> HashMap<&str, u32> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word).or_insert(0u32) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overwrites_oldest() {
        let mut r = Ring::with_capacity(2);
        assert_eq!(r.push(1), None);
        assert_eq!(r.push(2), None);
        assert_eq!(r.push(3), Some(1));
        assert_eq!(r.to_string(), "[2, 3]");
        let h = word_histogram("a b a\tc\n a");
        assert_eq!(h["a"], 3);
        let raw = r#"{"k": "v\n"}"#;
        assert!(raw.len() == 11 && b'\x7f' > 0x20u8 && 1_000_000i64 >= -0x7f);
    }
}
