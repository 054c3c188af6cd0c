//! `multipleOf` as the backend can check it.
//! - An integer's fractional `multipleOf` is written as the whole step it means: the integers that are
//!   multiples of p/q (in lowest terms) are the multiples of p. Exact, and it spares a backend the float
//!   division it cannot do precisely (llguidance refuses `0.123456789`, read as 0.12345678899999998).
//! - Where the backend checks a step with one automaton state per remainder
//!   ([`crate::schema::Target::multiple_of_states`]), a step needing more states is removed (lossy, said in
//!   the description): llguidance takes 12 s to match a 31-digit number against `multipleOf: 999983`, and
//!   did not finish in minutes at 123456789. Factors 2 and 5 cost nothing (decimal digits check them).

use super::primary_type;
use crate::schema::lookup::Lookup;
use crate::schema::types::Types;
use crate::schema::walk::post_order_cx;
use crate::schema::{Cx, Kind};
use serde_json::Value;

/// Passes that must run before this one in a profile's list: types are in their 2020-12 spelling.
pub const AFTER: &[&str] = &["dialect"];

/// Keywords without which this pass changes nothing (see [`super::Pass::wants`]).
pub const WANTS: &[&str] = &["multipleOf"];

pub fn run(root: &mut Value, cx: &mut Cx) {
    let states = cx.target.multiple_of_states;
    post_order_cx(root, cx, &mut |node, path, cx| {
        let Some(Value::Number(m)) = node.at("multipleOf") else { return };
        let text = m.to_string();
        if primary_type(node) == Some(Types::INTEGER) && !(m.is_u64() || m.is_i64()) {
            if let Some(step) = whole_step(&text) {
                node.insert("multipleOf".into(), Value::from(step));
                cx.record(path, Kind::BoundsNormalized, format!("multipleOf {text} on integers written as {step}"));
            }
        }
        let Some(limit) = states else { return };
        let Some(Value::Number(m)) = node.at("multipleOf") else { return };
        let digits: String = m.to_string().split(['e', 'E']).next().unwrap_or("").chars().filter(char::is_ascii_digit).collect();
        let needed = digits.trim_start_matches('0').parse::<u64>().map_or(u64::MAX, odd_part);
        if needed > limit {
            if let Some(v) = node.remove("multipleOf") {
                let said = crate::schema::removed_text(&[("multipleOf".to_string(), v)], 120);
                cx.lost(node, path, Kind::KeywordRemoved, &said, format!("removed {said}: a step of {needed} automaton states (over {limit})"));
            }
        }
    });
}

/// `n` without its factors 2 and 5: the remainders a decimal automaton must track to check `n`.
fn odd_part(mut n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    for f in [2, 5] {
        while n % f == 0 {
            n /= f;
        }
    }
    n
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

    #[test]
    fn only_factors_other_than_2_and_5_cost_states() {
        assert_eq!(odd_part(1000), 1);
        assert_eq!(odd_part(120), 3);
        assert_eq!(odd_part(999_983), 999_983);
        assert_eq!(odd_part(0), 0);
    }
}
