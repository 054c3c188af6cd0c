//! The llama.cpp releases toolfit is judged against, and what each fixed.

/// llama.cpp releases toolfit is judged against (each vendored by a llama-cpp-python sdist), oldest
/// first. A route declares the oldest it serves; what a later release fixed is then relied on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LlamaCpp {
    /// 2024-08 (llama-cpp-python 0.2.90); the default: every judged release is served
    #[default]
    V2024_08,
    /// 2024-12 (0.3.4)
    V2024_12,
    /// 2025-05 (0.3.9)
    V2025_05,
    /// 2025-08 (0.3.16)
    V2025_08,
    /// 2026-10 (0.3.36)
    V2026_10,
}

impl LlamaCpp {
    pub const ALL: &'static [LlamaCpp] = &[LlamaCpp::V2024_08, LlamaCpp::V2024_12, LlamaCpp::V2025_05, LlamaCpp::V2025_08, LlamaCpp::V2026_10];

    /// The release's month, as the configuration spells it.
    pub const fn name(self) -> &'static str {
        match self {
            LlamaCpp::V2024_08 => "2024-08",
            LlamaCpp::V2024_12 => "2024-12",
            LlamaCpp::V2025_05 => "2025-05",
            LlamaCpp::V2025_08 => "2025-08",
            LlamaCpp::V2026_10 => "2026-10",
        }
    }

    /// The llama-cpp-python release that vendors it.
    pub const fn python_package(self) -> &'static str {
        match self {
            LlamaCpp::V2024_08 => "0.2.90",
            LlamaCpp::V2024_12 => "0.3.4",
            LlamaCpp::V2025_05 => "0.3.9",
            LlamaCpp::V2025_08 => "0.3.16",
            LlamaCpp::V2026_10 => "0.3.36",
        }
    }

    /// The oldest release a route serves, from a `YYYY-MM` month: the newest judged release out by
    /// then (a build between two judged releases is treated as the older one, whose bugs it may
    /// still have). `None` for a malformed month or one before 2024-08.
    pub fn since(month: &str) -> Option<LlamaCpp> {
        let (y, m) = month.split_once('-')?;
        if y.len() != 4 || m.len() != 2 {
            return None;
        }
        let key = y.parse::<u32>().ok()? * 100 + m.parse::<u32>().ok().filter(|m| (1..=12).contains(m))?;
        LlamaCpp::ALL.iter().rev().copied().find(|v| {
            let (vy, vm) = v.name().split_once('-').unwrap_or(("0", "0"));
            vy.parse::<u32>().unwrap_or(0) * 100 + vm.parse::<u32>().unwrap_or(0) <= key
        })
    }

    // What each release enforces or breaks on, as the passes ask it. Each answer names the first judged
    // release that has it; a route whose oldest release is at least that one relies on it.

    /// Integer `minimum`/`maximum` past 32 bits are enforced exactly (older releases overflow them).
    pub fn wide_integer_bounds(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// A tool may come without `function.description` (up to 2025-08, llama-server answers 500
    /// `key 'description' not found`).
    pub fn tool_description_optional(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// A tool may come without `function.parameters` (up to 2025-08, llama-server answers 500
    /// `key 'parameters' not found`; 2026-10 reads a missing one as `{}`).
    pub fn tool_parameters_optional(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// `minItems`/`maxItems` apply without `items` (older releases apply them only beside `items`).
    pub fn item_counts_without_items(self) -> bool {
        self >= LlamaCpp::V2026_10
    }

    /// `maxItems: 0` beside `items` compiles (2024-08 and 2024-12 write a grammar they cannot parse).
    pub fn empty_arrays_beside_items(self) -> bool {
        self >= LlamaCpp::V2025_05
    }

    /// A definition is resolved whole wherever its refs stand (2024-08 and 2024-12 read a copy taken at
    /// the last ref to it, see `passes::refs_listed`).
    pub fn refs_read_whole(self) -> bool {
        self >= LlamaCpp::V2025_05
    }

    /// A definition that is itself a `$ref` compiles as its target (up to 2025-08 it compiles as any
    /// object).
    pub fn ref_chains(self) -> bool {
        self >= LlamaCpp::V2026_10
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_map_to_the_release_out_by_then() {
        assert_eq!(LlamaCpp::since("2024-08"), Some(LlamaCpp::V2024_08));
        assert_eq!(LlamaCpp::since("2025-01"), Some(LlamaCpp::V2024_12));
        assert_eq!(LlamaCpp::since("2026-09"), Some(LlamaCpp::V2025_08));
        assert_eq!(LlamaCpp::since("2026-10"), Some(LlamaCpp::V2026_10));
        assert_eq!(LlamaCpp::since("2031-01"), Some(LlamaCpp::V2026_10));
        for bad in ["2024-07", "2024-8", "2025-13", "latest", "", "2025-00"] {
            assert_eq!(LlamaCpp::since(bad), None, "{bad}");
        }
        for v in LlamaCpp::ALL {
            assert_eq!(LlamaCpp::since(v.name()), Some(*v));
        }
    }
}
