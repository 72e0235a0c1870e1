//! A validating JSON scanner: checks text against the JSON grammar (RFC 8259, as serde_json
//! accepts it) without building any value, so the importer validates a trace and picks out
//! the fields it needs in the same single pass, keeping every value as the text it was
//! written as.
//!
//! Strings are scanned eight bytes at a time; the text is already known to be UTF-8.

/// Why the text is not JSON, and where (a byte offset).
#[derive(Debug, PartialEq, Eq)]
pub struct Fault {
    pub at: usize,
    pub reason: &'static str,
    /// The text ended before the value did (a truncated file).
    pub eof: bool,
}

pub type Scanned<T> = std::result::Result<T, Fault>;

/// A cursor over JSON text.
pub struct Scanner<'a> {
    pub text: &'a str,
    b: &'a [u8],
    /// The offset of the next byte to read.
    pub at: usize,
    /// The closing brackets of the containers `value` is inside (no recursion: any depth).
    stack: Vec<u8>,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Scanner {
            text,
            b: text.as_bytes(),
            at: 0,
            stack: Vec::new(),
        }
    }

    /// A fault at the cursor; at the end of the text it is a truncation.
    pub fn fault(&self, reason: &'static str) -> Fault {
        let eof = self.at >= self.b.len();
        Fault {
            at: self.at.min(self.b.len()),
            reason: if eof { eof_reason(reason) } else { reason },
            eof,
        }
    }

    /// Past any whitespace.
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.at) {
            self.at += 1;
        }
    }

    /// The byte at the cursor; a truncation fault when there is none.
    pub fn peek(&self, expecting: &'static str) -> Scanned<u8> {
        self.b
            .get(self.at)
            .copied()
            .ok_or_else(|| self.fault(expecting))
    }

    /// Past `c`, which must be the byte at the cursor.
    pub fn eat(&mut self, c: u8, expecting: &'static str) -> Scanned<()> {
        if self.peek(expecting)? != c {
            return Err(self.fault(expecting));
        }
        self.at += 1;
        Ok(())
    }

    /// Past an opening `{` or `[` at the cursor and the whitespace after it; false when the
    /// container is empty (its closing bracket is passed too).
    pub fn open(&mut self, open: u8, close: u8, expecting: &'static str) -> Scanned<bool> {
        self.eat(open, expecting)?;
        self.ws();
        if self.peek(expecting)? == close {
            self.at += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// After a member or element: past `,` and whitespace (true) or the closing `close`
    /// (false).
    pub fn next_or_close(&mut self, close: u8, expecting: &'static str) -> Scanned<bool> {
        self.ws();
        match self.peek(expecting)? {
            b',' => {
                self.at += 1;
                self.ws();
                Ok(true)
            }
            c if c == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(self.fault(expecting)),
        }
    }

    /// Past a member's key, its colon and the whitespace before its value; returns the
    /// key's text (quotes included) and whether it has escapes.
    pub fn key(&mut self) -> Scanned<(&'a str, bool)> {
        if self.peek("an object")? != b'"' {
            return Err(self.fault("key must be a string"));
        }
        let start = self.at;
        let escaped = self.string()?;
        let key = &self.text[start..self.at];
        self.ws();
        self.eat(b':', "expected `:`")?;
        self.ws();
        Ok((key, escaped))
    }

    /// Past the value at the cursor (any JSON value); returns its text.
    pub fn value(&mut self) -> Scanned<&'a str> {
        let start = self.at;
        self.stack.clear();
        loop {
            // a value is due
            match self.peek("a value")? {
                b'"' => self.string().map(drop)?,
                b'{' => {
                    if self.open(b'{', b'}', "an object")? {
                        self.stack.push(b'}');
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    if self.open(b'[', b']', "a list")? {
                        self.stack.push(b']');
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return Err(self.fault("expected value")),
            }
            // a value ended: close what it ends, up to the next member or element
            loop {
                let Some(&close) = self.stack.last() else {
                    return Ok(&self.text[start..self.at]);
                };
                let expecting = if close == b'}' {
                    "expected `,` or `}`"
                } else {
                    "expected `,` or `]`"
                };
                if self.next_or_close(close, expecting)? {
                    if close == b'}' {
                        self.key()?;
                    }
                    break;
                }
                self.stack.pop();
            }
        }
    }

    /// Past the string at the cursor; returns whether it has escapes.
    fn string(&mut self) -> Scanned<bool> {
        let mut escaped = false;
        let mut at = self.at + 1;
        loop {
            at = string_stop(self.b, at);
            match self.b.get(at) {
                Some(b'"') => {
                    self.at = at + 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    self.at = at;
                    at = self.escape()?;
                }
                Some(_) => {
                    self.at = at;
                    return Err(self.fault(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ));
                }
                None => {
                    self.at = at;
                    return Err(self.fault("a string"));
                }
            }
        }
    }

    /// One past the escape sequence whose backslash is at the cursor.
    fn escape(&mut self) -> Scanned<usize> {
        self.at += 1;
        match self.peek("a string")? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(self.at + 1),
            b'u' => {
                for _ in 0..4 {
                    self.at += 1;
                    if !self.peek("a string")?.is_ascii_hexdigit() {
                        return Err(self.fault("invalid escape"));
                    }
                }
                Ok(self.at + 1)
            }
            _ => Err(self.fault("invalid escape")),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Scanned<()> {
        for &c in word {
            if self.peek("a value")? != c {
                return Err(self.fault("expected ident"));
            }
            self.at += 1;
        }
        Ok(())
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Scanned<()> {
        if self.b[self.at] == b'-' {
            self.at += 1;
        }
        match self.peek("a number")? {
            b'0' => {
                self.at += 1;
                if self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
                    return Err(self.fault("invalid number"));
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return Err(self.fault("invalid number")),
        }
        if self.b.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.b.get(self.at) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Scanned<()> {
        if !self.peek("a number")?.is_ascii_digit() {
            return Err(self.fault("invalid number"));
        }
        self.digits();
        Ok(())
    }
}

/// What a fault at the end of the text says, after serde_json's wording.
fn eof_reason(expecting: &'static str) -> &'static str {
    match expecting {
        "a string" => "EOF while parsing a string",
        "an object" | "expected `,` or `}`" | "expected `:`" => "EOF while parsing an object",
        "a list" | "expected `,` or `]`" => "EOF while parsing a list",
        _ => "EOF while parsing a value",
    }
}

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that equals `c`: exact up to the lowest such byte, so the
/// lowest set bit of a union of these masks finds the first byte of any of them.
pub(super) fn equal_bytes(x: u64, c: u8) -> u64 {
    let y = x ^ (ONES * u64::from(c));
    y.wrapping_sub(ONES) & !y & HIGH
}

/// The offset of the first `"`, `\` or control byte at or after `at` (or the text's length),
/// eight bytes at a time.
pub(super) fn string_stop(b: &[u8], mut at: usize) -> usize {
    while at + 8 <= b.len() {
        let x = u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let hits = equal_bytes(x, b'"') | equal_bytes(x, b'\\') | control;
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + b[at..]
        .iter()
        .position(|c| *c == b'"' || *c == b'\\' || *c < 0x20)
        .unwrap_or(b.len() - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole text as one JSON value followed only by whitespace.
    fn check(text: &str) -> Scanned<()> {
        let mut s = Scanner::new(text);
        s.ws();
        s.value()?;
        s.ws();
        if s.at != text.len() {
            return Err(s.fault("trailing characters"));
        }
        Ok(())
    }

    #[test]
    fn accepts_and_rejects_what_serde_json_does() {
        let texts = [
            r#"{}"#,
            r#"[]"#,
            r#" { "a" : [1, -2.5e+3, 0, 0.0, -0, 1E9, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9y"] } "#,
            r#"{"k": {"n": [[], {}, [{}]]}}"#,
            "\"é ü 日本 a long string over sixteen bytes, plain\"",
            r#"01"#,
            r#"1."#,
            r#"1e"#,
            r#"-"#,
            r#".5"#,
            r#"+1"#,
            r#"[1,]"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{1: 2}"#,
            r#"[1 2]"#,
            r#"tru"#,
            r#"nul"#,
            r#"trUe"#,
            "\"tab\tin a string\"",
            r#""bad \x escape""#,
            r#""\u12G4""#,
            r#"{"a": [1, 2"#,
            r#""unterminated"#,
            r#"[1] 2"#,
            r#"NaN"#,
            "",
        ];
        for text in texts {
            let ours = check(text);
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(text);
            assert_eq!(
                ours.is_ok(),
                serde.is_ok(),
                "{text:?}: {ours:?} vs {serde:?}"
            );
            // serde_json calls a number cut by the end of the text invalid; we call it cut.
            if let (Err(ours), Err(serde)) = (ours, serde) {
                assert!(ours.eof || !serde.is_eof(), "{text:?}");
            }
        }
    }

    #[test]
    fn any_depth_is_scanned_without_recursion() {
        let deep = format!("{}1{}", "[{\"k\":".repeat(100_000), "}]".repeat(100_000));
        assert!(check(&deep).is_ok());
        let cut = "[".repeat(100_000);
        assert!(check(&cut).unwrap_err().eof);
        let unbalanced = format!("{}{}", "[".repeat(1000), "]".repeat(999));
        assert!(check(&unbalanced).unwrap_err().eof);
    }

    #[test]
    fn faults_point_at_the_offending_byte() {
        assert_eq!(check(r#"{"ph": X}"#).unwrap_err().at, 7);
        let cut = r#"{"a": "b"#;
        let fault = check(cut).unwrap_err();
        assert!(fault.eof);
        assert_eq!(fault.at, cut.len());
    }

    #[test]
    fn string_stop_finds_the_first_quote_backslash_or_control_byte() {
        let text = "abcdefgh ijklmnop é\u{7f}\u{1f}xyz \\ \"ab";
        let b = text.as_bytes();
        for at in 0..=b.len() {
            let naive = (at..b.len())
                .find(|i| b[*i] == b'"' || b[*i] == b'\\' || b[*i] < 0x20)
                .unwrap_or(b.len());
            assert_eq!(string_stop(b, at), naive, "from {at}");
        }
    }
}
