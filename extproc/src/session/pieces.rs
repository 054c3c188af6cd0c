//! The original bytes of a body that the processor was handed and has not answered yet, kept as the
//! pieces Envoy sent (reference-counted, so a [`super::Rescue`] taken before heavy work shares them
//! rather than copying them).

use bytes::Bytes;
use std::collections::VecDeque;

#[derive(Clone, Default, Debug)]
pub(super) struct Pieces {
    list: VecDeque<Bytes>,
    len: usize,
}

impl Pieces {
    pub(super) fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.list.push_back(piece);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `n` bytes (all, if fewer are kept), taken out.
    pub(super) fn take_front(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n.min(self.len));
        while out.len() < n {
            let Some(mut first) = self.list.pop_front() else { break };
            let want = n - out.len();
            if first.len() > want {
                let rest = first.split_off(want);
                self.list.push_front(rest);
            }
            out.extend_from_slice(&first);
        }
        self.len -= out.len();
        out
    }

    /// Every byte kept, taken out (one piece alone is handed over without a copy when nothing else
    /// shares it).
    pub(super) fn take_all(&mut self) -> Vec<u8> {
        self.len = 0;
        if self.list.len() == 1 {
            if let Some(one) = self.list.pop_front() {
                return Vec::from(one);
            }
        }
        let mut out = Vec::with_capacity(self.list.iter().map(Bytes::len).sum());
        for p in self.list.drain(..) {
            out.extend_from_slice(&p);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces come out in order, split where asked, whatever their sizes; the control: a count past
    /// what is kept takes what there is.
    #[test]
    fn pieces_come_out_in_order() {
        let mut p = Pieces::default();
        for s in ["ab", "", "cde", "f"] {
            p.push(Bytes::from(s.as_bytes().to_vec()));
        }
        assert_eq!(p.len(), 6);
        assert_eq!(p.take_front(3), b"abc");
        assert_eq!((p.len(), p.clone().take_all()), (3, b"def".to_vec()));
        assert_eq!(p.take_front(1), b"d");
        assert_eq!(p.take_front(10), b"ef", "past the end: what is kept");
        assert!(p.is_empty() && p.take_all().is_empty());
        p.push(Bytes::from_static(b"xyz"));
        assert_eq!(p.take_all(), b"xyz");
    }
}
