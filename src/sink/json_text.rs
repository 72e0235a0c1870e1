//! JSON text as Python's `json` module writes it (the reference exporter is Python):
//! integers in full, floats in their shortest round-trip `repr`, strings with quotes,
//! backslashes and control characters escaped and other UTF-8 kept.

use std::io::Write;

pub fn write_int(buf: &mut Vec<u8>, v: i64) {
    let mut tmp = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        buf.push(b'-');
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// A JSON string (UTF-8 kept; quotes, backslashes and control characters escaped).
pub fn write_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    let bytes = s.as_bytes();
    // Most names need no escape: one check the compiler vectorizes, one copy.
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        buf.extend_from_slice(bytes);
        buf.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                buf.extend_from_slice(&bytes[start..i]);
                buf.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        buf.extend_from_slice(esc);
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// A float as Python's `repr` (and so `json.dumps`) writes it: the shortest digits that
/// round-trip, positional for exponents -4..16 (always with a fractional part), else
/// `d.ddde+XX`; `NaN` / `Infinity` as Python's json writes them.
pub fn write_py_float(buf: &mut Vec<u8>, v: f64) {
    if !write_thousandths(buf, v) {
        write_py_float_general(buf, v);
    }
}

/// The common case of [`write_py_float`], without formatting machinery: `v` is the double
/// nearest to k / 1000 for an integer |k| < 10^15 (a time in µs computed from integer ns).
/// Then the decimal k / 1000 has at most 15 significant digits, and distinct decimals of 15
/// digits or fewer are distinct doubles, so its digits are `v`'s shortest round-trip
/// digits. Returns false, writing nothing, for any other value.
fn write_thousandths(buf: &mut Vec<u8>, v: f64) -> bool {
    let k = (v * 1000.0).round();
    if !(k.abs() < 1e15 && (k / 1000.0).to_bits() == v.to_bits()) {
        return false;
    }
    if v.is_sign_negative() {
        buf.push(b'-');
    }
    let k = k.abs() as i64;
    write_int(buf, k / 1000);
    buf.push(b'.');
    let mut frac = k % 1000;
    if frac == 0 {
        buf.push(b'0');
        return true;
    }
    let mut width = 3;
    while frac % 10 == 0 {
        frac /= 10;
        width -= 1;
    }
    let digits = [
        b'0' + (frac / 100 % 10) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ];
    buf.extend_from_slice(&digits[3 - width..]);
    true
}

fn write_py_float_general(buf: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        buf.extend_from_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        buf.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    // Rust's `{:e}` is the shortest round-trip representation: "5.0000045e6", "1e0". It is
    // formatted on the stack: this runs twice per event.
    let mut sci = [0u8; 40];
    let len = {
        let mut cursor = std::io::Cursor::new(&mut sci[..]);
        write!(cursor, "{:e}", v.abs()).expect("an f64 in {:e} fits in 40 bytes");
        cursor.position() as usize
    };
    let sci = &sci[..len];
    let e_at = sci
        .iter()
        .position(|&b| b == b'e')
        .expect("{:e} always writes an exponent");
    let exp: i32 = std::str::from_utf8(&sci[e_at + 1..])
        .ok()
        .and_then(|e| e.parse().ok())
        .expect("{:e} writes an integer exponent");
    let mut digits_buf = [0u8; 40];
    let mut n = 0;
    for &b in sci[..e_at].iter().filter(|b| **b != b'.') {
        digits_buf[n] = b;
        n += 1;
    }
    let digits = &digits_buf[..n];
    if v.is_sign_negative() {
        buf.push(b'-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                buf.extend_from_slice(digits);
                buf.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
                buf.extend_from_slice(b".0");
            } else {
                buf.extend_from_slice(&digits[..int_len]);
                buf.push(b'.');
                buf.extend_from_slice(&digits[int_len..]);
            }
        } else {
            buf.extend_from_slice(b"0.");
            buf.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
            buf.extend_from_slice(digits);
        }
    } else {
        buf.push(digits[0]);
        if digits.len() > 1 {
            buf.push(b'.');
            buf.extend_from_slice(&digits[1..]);
        }
        buf.push(b'e');
        buf.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            buf.push(b'0');
        }
        buf.extend_from_slice(e.to_string().as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(v: f64) -> String {
        let mut b = Vec::new();
        write_py_float(&mut b, v);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn floats_are_written_like_python_repr() {
        assert_eq!(py(5000004.5), "5000004.5");
        assert_eq!(py(1.0), "1.0");
        assert_eq!(py(0.0), "0.0");
        assert_eq!(py(-0.0), "-0.0");
        assert_eq!(py(5000011.9), "5000011.9");
        assert_eq!(py(0.0001), "0.0001");
        assert_eq!(py(0.00001), "1e-05");
        assert_eq!(py(1e15), "1000000000000000.0");
        assert_eq!(py(1e16), "1e+16");
        assert_eq!(py(1.5e300), "1.5e+300");
        assert_eq!(py(-2.5), "-2.5");
        assert_eq!(py(123456789.123), "123456789.123");
        assert_eq!(py(f64::NAN), "NaN");
    }

    #[test]
    fn thousandths_are_written_as_the_general_repr_writes_them() {
        let general = |v: f64| {
            let mut b = Vec::new();
            write_py_float_general(&mut b, v);
            String::from_utf8(b).unwrap()
        };
        // µs times from integer ns: small, large, negative, around the 10^15 bound
        let mut k: i64 = 1;
        for _ in 0..200_000 {
            k = k
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for ns in [
                k % 1000,
                k % 10_000_000,
                k % 1_000_000_000_000_000,
                k % 10_000_000_000_000_000,
            ] {
                let v = ns as f64 / 1000.0;
                assert_eq!(py(v), general(v), "{ns} ns");
            }
        }
        for v in [
            0.0,
            -0.0,
            0.001,
            0.1,
            999999999999.999,
            1e12,
            -1.5,
            0.0005,
            1.0 / 3.0,
        ] {
            assert_eq!(py(v), general(v), "{v}");
        }
    }

    #[test]
    fn strings_escape_quotes_and_controls() {
        let mut b = Vec::new();
        write_str(&mut b, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(b).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }

    #[test]
    fn ints_are_written_in_full() {
        let mut b = Vec::new();
        write_int(&mut b, i64::MIN);
        b.push(b' ');
        write_int(&mut b, 0);
        b.push(b' ');
        write_int(&mut b, 1099511627776);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "-9223372036854775808 0 1099511627776"
        );
    }
}
