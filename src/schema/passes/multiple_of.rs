//! An integer's fractional `multipleOf` written as the whole step it means: the integers that are
//! multiples of p/q (in lowest terms) are the multiples of p. Exact, and it spares a backend the float
//! division it cannot do precisely (llguidance refuses `0.123456789`, read as 0.12345678899999998).

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::types::Types;
use crate::schema::walk::post_order;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: types are in their 2020-12 spelling.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["multipleOf"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let mut recs: Vec<(String, String)> = Vec::new();
    post_order(root, "", &mut |node, path| {
        if primary_type(node) != Some(Types::INTEGER) {
            return;
        }
        let Some(Value::Number(m)) = node.at("multipleOf") else { return };
        if m.is_u64() || m.is_i64() {
            return;
        }
        let text = m.to_string();
        let Some(step) = whole_step(&text) else { return };
        node.insert("multipleOf".into(), Value::from(step));
        recs.push((path.to_string(), format!("multipleOf {text} on integers written as {step}")));
    });
    for (path, detail) in recs {
        cx.record(&path, Kind::BoundsNormalized, detail);
    }
}

/// The numerator of a positive decimal `d.ddd` in lowest terms, if it fits; `None` for exponents,
/// negative or zero values, and more digits than a u64 holds.
fn whole_step(text: &str) -> Option<u64> {
    let (int, frac) = text.split_once('.')?;
    if frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || frac.len() > 18 {
        return None;
    }
    let p: u64 = format!("{int}{frac}").parse().ok()?;
    let q: u64 = 10u64.checked_pow(u32::try_from(frac.len()).ok()?)?;
    if p == 0 {
        return None;
    }
    Some(p / gcd(p, q))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_lowest_numerators() {
        assert_eq!(whole_step("0.123456789"), Some(123_456_789));
        assert_eq!(whole_step("1.5"), Some(3));
        assert_eq!(whole_step("0.5"), Some(1));
        assert_eq!(whole_step("2.50"), Some(5));
        for bad in ["1e-3", "-0.5", "0.0", "1", "0.1234567890123456789"] {
            assert_eq!(whole_step(bad), None, "{bad}");
        }
    }
}
