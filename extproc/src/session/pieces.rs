//! The original bytes of a body that the processor was handed and has not answered yet, kept as the
//! pieces Envoy sent (reference-counted, so a [`super::Rescue`] taken before heavy work shares them
//! rather than copying them). Small pieces are gathered into blocks of [`BLOCK`] bytes: a rescue is
//! taken before every heavy message, so what it clones must stay short however small the pieces come
//! (a 14 MB body in 100-byte pieces would otherwise be 140,000 entries cloned per message).

use bytes::Bytes;
use std::collections::VecDeque;

/// Pieces from this size on are kept as they came; smaller ones are copied into a block of this size.
const BLOCK: usize = 64 << 10;

#[derive(Clone, Default, Debug)]
pub(super) struct Pieces {
    /// Whole blocks and large pieces, in order; `tail` follows them.
    list: VecDeque<Bytes>,
    tail: Vec<u8>,
    len: usize,
}

impl Pieces {
    pub(super) fn push(&mut self, piece: Bytes) {
        self.len += piece.len();
        if piece.len() >= BLOCK {
            self.seal();
            self.list.push_back(piece);
            return;
        }
        self.tail.extend_from_slice(&piece);
        if self.tail.len() >= BLOCK {
            self.seal();
        }
    }

    /// The tail becomes a block of the list.
    fn seal(&mut self) {
        if !self.tail.is_empty() {
            self.list.push_back(Bytes::from(std::mem::take(&mut self.tail)));
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
        self.seal();
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
        self.len = self.len.saturating_sub(out.len());
        out
    }

    /// Every byte kept, taken out (one piece alone is handed over without a copy when nothing else
    /// shares it).
    pub(super) fn take_all(&mut self) -> Vec<u8> {
        self.seal();
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

    /// How many entries a clone copies (the tests' view of the bound above).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.list.len() + usize::from(!self.tail.is_empty())
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

    /// A body in 100-byte pieces is kept in blocks: a 2 MB body is a few dozen entries, not 20,000,
    /// and comes out whole and in order; a large piece is kept as it came. The control: the same bytes
    /// in one piece come out the same.
    #[test]
    fn small_pieces_are_kept_in_blocks() {
        let body: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut p = Pieces::default();
        for c in body.chunks(100) {
            p.push(Bytes::copy_from_slice(c));
        }
        p.push(Bytes::from(vec![7u8; BLOCK * 2]));
        assert!(p.entries() <= body.len() / BLOCK + 3, "{} entries", p.entries());
        let mut whole = body.clone();
        whole.extend(vec![7u8; BLOCK * 2]);
        let mut front = p.clone();
        assert_eq!(front.take_front(12_345), whole[..12_345]);
        assert_eq!(front.take_all(), whole[12_345..]);
        assert_eq!(p.take_all(), whole);
        let mut one = Pieces::default();
        one.push(Bytes::from(whole.clone()));
        assert_eq!(one.take_all(), whole);
    }
}
