//! The functors on symbols, evaluated as Soufflé 2.5 evaluates them: `cat`, `strlen`,
//! `substr`, `ord`, `to_string`, the constraints `contains` and `match`, and the
//! conversions of a symbol's text to a number (`to_number`, `to_unsigned`,
//! `to_float`).
//!
//! They read symbols' text from, and intern the symbols they make into, the program's
//! [`SymbolTable`] (shared with the front end, so what an engine makes is what gets
//! printed). Where Soufflé stops the whole evaluation with an error (a text that is not
//! a number), the functor has no value here and the rule does not fire, as with a
//! division by zero.

use crate::value::{SymbolTable, Type, Value, format_float};
use dynalog_syntax::{Functor, UnaryOp};
use regex::Regex;
use std::cell::RefCell;
use std::collections::HashMap;

/// Compiled regular expressions kept per thread, by pattern text.
const REGEX_CACHE: usize = 256;
/// The most memory one pattern's compiled form may take: a pattern is data (it can come
/// from facts), so its size is bounded like every other size input controls.
const REGEX_SIZE: usize = 1 << 20;

/// `f(args)`, where `ty` is the operand's type for `to_string` (ignored otherwise).
/// `None` when the functor has no value for these arguments.
pub fn eval_call(f: Functor, ty: Type, args: &[Value], symbols: &SymbolTable) -> Option<Value> {
    let text = |i: usize| args.get(i).and_then(|&v| symbols.get(v));
    let bool01 = |b: bool| Some(b as Value);
    match f {
        Functor::Cat => {
            let mut out = String::new();
            for i in 0..args.len() {
                out.push_str(&text(i)?);
            }
            Some(symbols.intern(&out))
        }
        Functor::Strlen => Some(text(0)?.len() as i32 as Value),
        Functor::Substr => {
            let s = text(0)?;
            let (i, n) = (*args.get(1)? as i32, *args.get(2)? as i32);
            Some(symbols.intern(&substr(&s, i, n)))
        }
        Functor::Ord => Some(*args.first()?),
        Functor::ToString => {
            let v = *args.first()?;
            Some(match ty {
                Type::Symbol => v,
                _ => symbols.intern(&to_string(ty, v)),
            })
        }
        Functor::Contains => bool01(text(1)?.contains(&*text(0)?)),
        Functor::Match => bool01(matches(&text(0)?, &text(1)?)),
        // Rewritten into rules by the analysis (module `check::ranges`).
        Functor::Range => None,
        // The arguments are the rule's key and its body's binding (`check::autoinc`).
        Functor::Autoinc => Some(symbols.autoinc(args)),
    }
}

/// The type of argument `i` of `f`, `ty` being the operand's type for `to_string`.
pub fn call_arg_type(f: Functor, ty: Type, i: usize) -> Type {
    match (f, i) {
        (Functor::ToString, _) => ty,
        (Functor::Substr, 1 | 2) | (Functor::Autoinc, _) => Type::Number,
        _ => Type::Symbol,
    }
}

/// The type of `f`'s result.
pub fn call_type(f: Functor) -> Type {
    match f {
        Functor::Cat | Functor::Substr | Functor::ToString => Type::Symbol,
        Functor::Strlen | Functor::Ord | Functor::Contains | Functor::Match | Functor::Autoinc => {
            Type::Number
        }
        // Never lowered (module `check::ranges` rewrites it).
        Functor::Range => Type::Number,
    }
}

/// C++'s `s.substr(i, n)` on bytes, as Soufflé calls it: empty when `i` is negative or
/// past the end (Soufflé also prints a warning), a negative `n` meaning "to the end". A
/// cut inside a multi-byte character is replaced by U+FFFD (symbols are UTF-8 here;
/// Soufflé keeps the raw bytes).
pub fn substr(s: &str, i: i32, n: i32) -> String {
    let bytes = s.as_bytes();
    if i < 0 || i as usize > bytes.len() {
        return String::new();
    }
    let start = i as usize;
    let end = if n < 0 {
        bytes.len()
    } else {
        start.saturating_add(n as usize).min(bytes.len())
    };
    String::from_utf8_lossy(&bytes[start..end]).into_owned()
}

/// `to_string(v)` for a value of numeric type `ty`: integers in decimal, floats as C's
/// `%f` (six decimals, `inf`, `-nan`, ...), as Soufflé's `std::to_string`.
pub fn to_string(ty: Type, v: Value) -> String {
    match ty {
        Type::Number => (v as i32).to_string(),
        Type::Unsigned => v.to_string(),
        Type::Float => {
            let x = f32::from_bits(v);
            if x.is_nan() {
                if x.is_sign_negative() { "-nan" } else { "nan" }.to_string()
            } else if x.is_infinite() {
                format_float(x)
            } else {
                format!("{:.6}", f64::from(x))
            }
        }
        // Not called for symbols (they are their own text).
        Type::Symbol | Type::Record(_) => String::new(),
    }
}

/// Whether the regular expression `pattern` matches all of `text` (C++'s
/// `std::regex_match`). An invalid pattern matches nothing (Soufflé warns). The syntax
/// is the `regex` crate's, which agrees with ECMAScript's on the common constructs but
/// has no back-references or look-around.
pub fn matches(pattern: &str, text: &str) -> bool {
    thread_local! {
        static CACHE: RefCell<HashMap<String, Option<Regex>>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= REGEX_CACHE {
                cache.clear();
            }
            cache.insert(pattern.to_string(), compile(pattern));
        }
        cache
            .get(pattern)
            .and_then(Option::as_ref)
            .is_some_and(|re| re.is_match(text))
    })
}

/// `pattern` anchored at both ends, if it is valid on its own and small enough.
fn compile(pattern: &str) -> Option<Regex> {
    let build = |p: &str| {
        regex::RegexBuilder::new(p)
            .size_limit(REGEX_SIZE)
            .dfa_size_limit(REGEX_SIZE)
            .build()
    };
    // Checked alone first, so that anchoring cannot make an unbalanced pattern valid.
    build(pattern).ok()?;
    build(&format!("^(?:{pattern})$")).ok()
}

/// The conversion `op` (`to_number`, `to_unsigned`, `to_float`) of a symbol's text, as
/// Soufflé 2.5 reads it: leading white space skipped, trailing text ignored (`"12abc"`
/// is 12); integers in decimal, or hexadecimal after `0x` and binary after `0b`; an
/// unsigned has no sign; a float as C's `strtof` reads it. `None` when no number starts
/// the text or it is out of the type's range (Soufflé stops with an error there).
pub fn parse_symbol(op: UnaryOp, text: &str) -> Option<Value> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    match op {
        UnaryOp::ToNumber => {
            let n = parse_integer(t, true)?;
            i32::try_from(n).ok().map(|v| v as Value)
        }
        UnaryOp::ToUnsigned => u32::try_from(parse_integer(t, false)?).ok(),
        UnaryOp::ToFloat => parse_float(t).map(f32::to_bits),
        UnaryOp::BNot | UnaryOp::LNot => None,
    }
}

/// The integer at the start of `t`: `0x` hex, `0b` binary, else optionally signed
/// decimal (a sign only if `signed`).
fn parse_integer(t: &str, signed: bool) -> Option<i128> {
    let radix_digits = |rest: &str, radix: u32| -> Option<i128> {
        let end = rest
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(rest.len());
        // Too many digits for any 32-bit type: out of range.
        if end == 0 || end > 40 {
            return None;
        }
        i128::from_str_radix(&rest[..end], radix).ok()
    };
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return radix_digits(hex, 16);
    }
    if let Some(bin) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        return radix_digits(bin, 2);
    }
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') if signed => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = radix_digits(digits, 10)?;
    Some(if negative { -n } else { n })
}

/// The float at the start of `t`, as `strtof` reads it (decimal with an optional
/// exponent, `0x` hexadecimal integers, `inf`, `infinity`, `nan`); `None` if none does
/// or it is beyond a float's range.
fn parse_float(t: &str) -> Option<f32> {
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let negative = b.first() == Some(&b'-');
    let rest = &t[i..];
    let lower = rest.get(..8).unwrap_or(rest).to_ascii_lowercase();
    if lower.starts_with("inf") {
        return Some(if negative {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        });
    }
    if lower.starts_with("nan") {
        return Some(if negative { -f32::NAN } else { f32::NAN });
    }
    if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X"))
        && let Some(n) = parse_integer(&format!("0x{hex}"), false)
    {
        let x = n as f64;
        return finite(if negative { -x } else { x });
    }
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let int_end = digits(i);
    let mut end = int_end;
    if end < b.len() && b[end] == b'.' {
        end = digits(end + 1);
    }
    // At least one digit before or after the point.
    if end == i || (end == i + 1 && b[i] == b'.') {
        return None;
    }
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut k = end + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        let exp_end = digits(k);
        if exp_end > k {
            end = exp_end;
        }
    }
    let x: f64 = t[..end].parse().ok()?;
    finite(x)
}

/// `x` as a float, `None` if beyond a float's range (C's `strtof` reports a range
/// error, on which Soufflé stops).
fn finite(x: f64) -> Option<f32> {
    let f = x as f32;
    (f.is_finite() || !x.is_finite()).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substr_is_cpp_substr_on_bytes() {
        assert_eq!(substr("hello", 1, 3), "ell");
        assert_eq!(substr("hello", 1, 6), "ello");
        assert_eq!(substr("hello", 5, 3), "");
        assert_eq!(substr("hello", 6, 1), "");
        assert_eq!(substr("hello", -1, 3), "");
        assert_eq!(substr("hello", 1, -1), "ello");
        assert_eq!(substr("héllo", 0, 2), "h\u{fffd}");
        assert_eq!(substr("héllo", 1, 2), "é");
    }

    #[test]
    fn to_string_is_stds_to_string() {
        let f = |x: f32| to_string(Type::Float, x.to_bits());
        assert_eq!(f(2.5), "2.500000");
        assert_eq!(f(0.1), "0.100000");
        assert_eq!(f(1.0 / 3.0), "0.333333");
        assert_eq!(f(-0.0), "-0.000000");
        assert_eq!(f(123456789.0), "123456792.000000");
        assert_eq!(f(1e10), "10000000000.000000");
        assert_eq!(f(f32::INFINITY), "inf");
        assert_eq!(f(-f32::NAN), "-nan");
        assert_eq!(to_string(Type::Number, (-7i32) as u32), "-7");
        assert_eq!(to_string(Type::Unsigned, u32::MAX), "4294967295");
    }

    #[test]
    fn symbols_read_as_numbers_as_souffle_reads_them() {
        let n = |s: &str| parse_symbol(UnaryOp::ToNumber, s).map(|v| v as i32);
        assert_eq!(n("12"), Some(12));
        assert_eq!(n(" 13"), Some(13));
        assert_eq!(n("-4"), Some(-4));
        assert_eq!(n("+5"), Some(5));
        assert_eq!(n("12abc"), Some(12));
        assert_eq!(n("0x10"), Some(16));
        assert_eq!(n("0b11"), Some(3));
        assert_eq!(n("010"), Some(10));
        assert_eq!(n("abc"), None);
        assert_eq!(n(""), None);
        assert_eq!(n("99999999999"), None);
        assert_eq!(n("2147483647"), Some(i32::MAX));
        assert_eq!(n("-2147483648"), Some(i32::MIN));
        let u = |s: &str| parse_symbol(UnaryOp::ToUnsigned, s);
        assert_eq!(u("4294967295"), Some(u32::MAX));
        assert_eq!(u("4294967296"), None);
        assert_eq!(u("-3"), None);
        assert_eq!(u("1.5"), Some(1));
        assert_eq!(u("1e3"), Some(1));
        let f = |s: &str| parse_symbol(UnaryOp::ToFloat, s).map(f32::from_bits);
        assert_eq!(f("1.5"), Some(1.5));
        assert_eq!(f("1e3"), Some(1000.0));
        assert_eq!(f("0x1F"), Some(31.0));
        assert_eq!(f("0b11"), Some(0.0));
        assert_eq!(f(".5"), Some(0.5));
        assert_eq!(f("5."), Some(5.0));
        assert_eq!(f("-inf"), Some(f32::NEG_INFINITY));
        assert_eq!(f("1e40"), None);
        assert_eq!(f("."), None);
        assert_eq!(f("x"), None);
        assert!(f("nan").is_some_and(f32::is_nan));
    }

    #[test]
    fn match_is_a_whole_match_and_bad_patterns_match_nothing() {
        assert!(matches("[a-z]+", "hello"));
        assert!(!matches("[a-z]+", "a1b2"));
        assert!(matches("a.*", "a1b2"));
        assert!(matches("a|ab", "ab"));
        assert!(matches("", ""));
        assert!(matches("\\d+", "123"));
        assert!(!matches("[", "["));
        assert!(!matches("a)|(b", "b"));
        // Too large a compiled form: refused, not built.
        assert!(!matches("(a{1000}){1000}", "a"));
    }

    #[test]
    fn functors_intern_what_they_make() {
        let symbols = SymbolTable::new();
        let (a, b) = (symbols.intern("ab"), symbols.intern("c"));
        let cat = eval_call(Functor::Cat, Type::Symbol, &[a, b, a], &symbols);
        assert_eq!(
            cat.map(|v| symbols.resolve(v).to_string()),
            Some("abcab".into())
        );
        assert_eq!(
            eval_call(Functor::Cat, Type::Symbol, &[a, b], &symbols),
            symbols.lookup("abc")
        );
        assert_eq!(
            eval_call(Functor::Strlen, Type::Symbol, &[a], &symbols),
            Some(2)
        );
        assert_eq!(
            eval_call(Functor::Contains, Type::Symbol, &[b, a], &symbols),
            Some(0)
        );
        assert_eq!(
            eval_call(
                Functor::Contains,
                Type::Symbol,
                &[b, cat.unwrap_or(0)],
                &symbols
            ),
            Some(1)
        );
        let s = eval_call(Functor::ToString, Type::Number, &[(-3i32) as u32], &symbols);
        assert_eq!(s, symbols.lookup("-3"));
        assert_eq!(
            eval_call(Functor::ToString, Type::Symbol, &[b], &symbols),
            Some(b)
        );
        // An id the table does not have: no value, not a panic.
        assert_eq!(
            eval_call(Functor::Strlen, Type::Symbol, &[999], &symbols),
            None
        );
    }
}
