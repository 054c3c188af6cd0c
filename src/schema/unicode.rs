//! The code points of a Unicode property as a pattern's `\p{..}` names it (ECMA-262 with the `u` flag):
//! general categories by short or long name (`L`, `Letter`, `gc=Lu`, `General_Category=Lu`), the
//! unions of them (`L`, `LC`, `M`, `N`, `P`, `S`, `Z`, `C` and `Cn`), `Any`, `ASCII`, `Assigned`, and
//! the emoji properties the corpus uses. A dialect without `\p{..}` gets the ranges written out
//! ([`crate::schema::python_re`]); a property not here (a script, most binary properties) is unknown.

#[path = "unicode_tables.rs"]
mod tables;

pub use tables::UNICODE;

/// Inclusive code point ranges, sorted and apart.
pub type Ranges = Vec<(u32, u32)>;

const LAST: u32 = 0x10FFFF;

/// The long names of the general category's values, and the unions' leaves.
const CATEGORIES: &[(&str, &str, &[&str])] = &[
    ("L", "Letter", &["Lu", "Ll", "Lt", "Lm", "Lo"]),
    ("LC", "Cased_Letter", &["Lu", "Ll", "Lt"]),
    ("Lu", "Uppercase_Letter", &["Lu"]),
    ("Ll", "Lowercase_Letter", &["Ll"]),
    ("Lt", "Titlecase_Letter", &["Lt"]),
    ("Lm", "Modifier_Letter", &["Lm"]),
    ("Lo", "Other_Letter", &["Lo"]),
    ("M", "Mark", &["Mn", "Mc", "Me"]),
    ("Mn", "Nonspacing_Mark", &["Mn"]),
    ("Mc", "Spacing_Mark", &["Mc"]),
    ("Me", "Enclosing_Mark", &["Me"]),
    ("N", "Number", &["Nd", "Nl", "No"]),
    ("Nd", "Decimal_Number", &["Nd"]),
    ("Nl", "Letter_Number", &["Nl"]),
    ("No", "Other_Number", &["No"]),
    ("P", "Punctuation", &["Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"]),
    ("Pc", "Connector_Punctuation", &["Pc"]),
    ("Pd", "Dash_Punctuation", &["Pd"]),
    ("Ps", "Open_Punctuation", &["Ps"]),
    ("Pe", "Close_Punctuation", &["Pe"]),
    ("Pi", "Initial_Punctuation", &["Pi"]),
    ("Pf", "Final_Punctuation", &["Pf"]),
    ("Po", "Other_Punctuation", &["Po"]),
    ("S", "Symbol", &["Sm", "Sc", "Sk", "So"]),
    ("Sm", "Math_Symbol", &["Sm"]),
    ("Sc", "Currency_Symbol", &["Sc"]),
    ("Sk", "Modifier_Symbol", &["Sk"]),
    ("So", "Other_Symbol", &["So"]),
    ("Z", "Separator", &["Zs", "Zl", "Zp"]),
    ("Zs", "Space_Separator", &["Zs"]),
    ("Zl", "Line_Separator", &["Zl"]),
    ("Zp", "Paragraph_Separator", &["Zp"]),
    ("C", "Other", &["Cc", "Cf", "Cs", "Co", "Cn"]),
    ("Cc", "Control", &["Cc"]),
    ("Cf", "Format", &["Cf"]),
    ("Cs", "Surrogate", &["Cs"]),
    ("Co", "Private_Use", &["Co"]),
    ("Cn", "Unassigned", &["Cn"]),
];

/// Other spellings ECMA-262 accepts for a category or property.
const ALIASES: &[(&str, &str)] = &[
    ("Combining_Mark", "M"),
    ("digit", "Nd"),
    ("punct", "P"),
    ("cntrl", "Cc"),
    ("ExtPict", "Extended_Pictographic"),
    ("EComp", "Emoji_Component"),
    ("RI", "Regional_Indicator"),
    ("space", "White_Space"),
    ("WSpace", "White_Space"),
    ("AHex", "ASCII_Hex_Digit"),
    ("Hex", "Hex_Digit"),
];

/// The ranges of property `name` as written inside `\p{..}`; `None` when toolfit does not know it.
pub fn property(name: &str) -> Option<Ranges> {
    let name = match name.split_once('=') {
        Some(("General_Category" | "gc", v)) => v,
        Some(_) => return None, // Script=, Script_Extensions=: not tabled
        None => name,
    };
    let name = ALIASES.iter().find(|(a, _)| *a == name).map_or(name, |(_, n)| *n);
    match name {
        "Any" => return Some(vec![(0, LAST)]),
        "ASCII" => return Some(vec![(0, 0x7F)]),
        "Assigned" => return Some(assigned()),
        _ => {}
    }
    if let Some((_, _, leaves)) = CATEGORIES.iter().find(|(short, long, _)| *short == name || *long == name) {
        let mut all = Vec::new();
        for leaf in *leaves {
            all.extend(if *leaf == "Cn" { complement(&assigned()) } else { table(leaf)? });
        }
        return Some(normalize(all));
    }
    table(name)
}

/// Every code point no general category leaf lists is unassigned (`Cn`).
fn assigned() -> Ranges {
    normalize(tables::TABLES.iter().filter(|(n, _)| n.len() == 2).flat_map(|(n, _)| table(n).unwrap_or_default()).collect())
}

/// One table, decoded.
fn table(name: &str) -> Option<Ranges> {
    let (_, bytes) = tables::TABLES.iter().find(|(n, _)| *n == name)?;
    let mut out = Vec::new();
    let mut it = bytes.iter().copied();
    let mut prev: u32 = 0;
    while let Some(gap) = varint(&mut it) {
        let len = varint(&mut it)?;
        let start = prev.checked_add(gap)?;
        let end = start.checked_add(len)?;
        out.push((start, end));
        prev = end;
    }
    Some(out)
}

fn varint(it: &mut impl Iterator<Item = u8>) -> Option<u32> {
    let mut n: u32 = 0;
    let mut shift = 0;
    loop {
        let b = it.next()?;
        n |= u32::from(b & 0x7F).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
}

/// Sorted, with touching and overlapping ranges joined.
pub fn normalize(mut r: Ranges) -> Ranges {
    r.sort_unstable();
    let mut out: Ranges = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The code points not in `r` (which is normalized).
pub fn complement(r: &[(u32, u32)]) -> Ranges {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(a, b) in r {
        if a > next {
            out.push((next, a - 1));
        }
        next = b.saturating_add(1);
    }
    if next <= LAST {
        out.push((next, LAST));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(r: &Ranges, c: u32) -> bool {
        r.iter().any(|&(a, b)| a <= c && c <= b)
    }

    #[test]
    fn properties_hold_what_their_names_say() {
        let lu = property("Lu").unwrap_or_default();
        assert!(has(&lu, 'A' as u32) && has(&lu, 'Ä' as u32) && !has(&lu, 'a' as u32) && !has(&lu, '1' as u32));
        assert_eq!(property("Uppercase_Letter"), Some(lu.clone()));
        assert_eq!(property("gc=Lu"), Some(lu.clone()));
        assert_eq!(property("General_Category=Uppercase_Letter"), Some(lu));
        let l = property("L").unwrap_or_default();
        assert!(has(&l, 'a' as u32) && has(&l, 'Z' as u32) && has(&l, '漢' as u32) && !has(&l, ' ' as u32));
        assert_eq!(property("Zl"), Some(vec![(0x2028, 0x2028)]));
        assert_eq!(property("Zp"), Some(vec![(0x2029, 0x2029)]));
        assert_eq!(property("Cc"), Some(vec![(0, 0x1F), (0x7F, 0x9F)]));
        let cf = property("Cf").unwrap_or_default();
        assert!(has(&cf, 0xAD) && has(&cf, 0x200B) && has(&cf, 0xFEFF) && has(&cf, 0xE0001));
        let pict = property("Extended_Pictographic").unwrap_or_default();
        assert!(has(&pict, 0x1F600) && has(&pict, 0xA9) && !has(&pict, 'a' as u32));
        // the leaves and Cn partition the code points
        let c = property("C").unwrap_or_default();
        let all = normalize(
            [
                l,
                property("M").unwrap_or_default(),
                property("N").unwrap_or_default(),
                property("P").unwrap_or_default(),
                property("S").unwrap_or_default(),
                property("Z").unwrap_or_default(),
                c,
            ]
            .concat(),
        );
        assert_eq!(all, vec![(0, LAST)]);
        // what is not tabled is unknown, never guessed
        assert_eq!(property("Script=Latin"), None);
        assert_eq!(property("Letters"), None);
    }

    #[test]
    fn complement_and_normalize_are_exact_at_the_edges() {
        assert_eq!(complement(&[(0, 0x40), (0x5B, LAST)]), vec![(0x41, 0x5A)]);
        assert_eq!(complement(&[]), vec![(0, LAST)]);
        assert_eq!(complement(&[(0, LAST)]), Vec::<(u32, u32)>::new());
        assert_eq!(normalize(vec![(5, 9), (0, 4), (20, 30), (25, 26)]), vec![(0, 9), (20, 30)]);
    }
}
