//! The Chrome sink's view of a batch: each column downcast once, with the member it makes
//! (a key, a list's items, a spread), as the column-name conventions of the module docs say.

use std::collections::HashMap;

use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Float64Array, Int32Array, Int64Array, LargeStringArray,
    StringArray, StringViewArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type, UInt64Type};

use super::args;
use crate::error::Error;
use crate::sink::json_text::{write_int, write_py_float, write_str};
use crate::Result;

/// A column name's list and item: `k[2]` is item 2 of list `k`.
pub(super) fn list_item(name: &str) -> Option<(&str, usize)> {
    let (list, item) = name.strip_suffix(']')?.rsplit_once('[')?;
    Some((list, item.parse().ok()?))
}

/// A member of `args`: a keyed column, or a column spread into members.
pub(super) enum Member<'a> {
    Key(Key, Column<'a>),
    Spread(Spread),
}

/// A spread column's members for each row of a batch: JSON text without braces, decoded
/// once per distinct cell (annotations repeat: one per graph node, every replay).
pub(super) struct Spread {
    /// the distinct cells' members, trimmed (possibly empty)
    members: Vec<String>,
    /// each row's index into `members`; [`Spread::NONE`] for none (a NULL cell, `null`)
    at: Vec<u32>,
}

impl Spread {
    const NONE: u32 = u32::MAX;

    /// The `rows` of `column` (named `name`) spread as `kind` says: `annotation` or
    /// `metadata`.
    pub(super) fn new(column: &Column<'_>, rows: usize, kind: &str, name: &str) -> Result<Spread> {
        let decode: fn(&str) -> Option<String> = match kind {
            "annotation" => args::annotation_members,
            "metadata" => args::text_members,
            _ => {
                return Err(Error::Internal(format!(
                    "chrome sink: column `{name}` spreads `{kind}`; expected `args.*annotation` \
                     or `args.*metadata`"
                )))
            }
        };
        if !matches!(column, Column::Str(..) | Column::Null) {
            return Err(Error::Internal(format!(
                "chrome sink: column `{name}` is spread, so it must be text"
            )));
        }
        let mut spread = Spread {
            members: Vec::new(),
            at: Vec::with_capacity(rows),
        };
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for row in 0..rows {
            if column.is_null(row) {
                spread.at.push(Self::NONE);
                continue;
            }
            let text = column.text(row);
            let at = *seen.entry(text).or_insert_with(|| match decode(text) {
                Some(members) => {
                    spread.members.push(members.trim().to_string());
                    (spread.members.len() - 1) as u32
                }
                None => Self::NONE,
            });
            spread.at.push(at);
        }
        Ok(spread)
    }

    /// The row's members, None for none.
    pub(super) fn members(&self, row: usize) -> Option<&str> {
        match self.at[row] {
            Self::NONE => None,
            i => Some(&self.members[i as usize]),
        }
    }
}

impl Member<'_> {
    fn is_null(&self, row: usize) -> bool {
        match self {
            Member::Key(_, column) => column.is_null(row),
            Member::Spread(spread) => spread.at[row] == Spread::NONE,
        }
    }
}

/// A member's key, with its JSON text (`"key":`) encoded once per batch.
pub(super) struct Key {
    pub(super) name: String,
    json: Vec<u8>,
}

impl Key {
    pub(super) fn new(name: &str) -> Key {
        let mut json = Vec::with_capacity(name.len() + 3);
        write_str(&mut json, name);
        json.push(b':');
        Key {
            name: name.to_string(),
            json,
        }
    }

    /// `"key":`, after a comma unless it is the object's `first` member.
    pub(super) fn write(&self, buf: &mut Vec<u8>, first: &mut bool) {
        if !*first {
            buf.push(b',');
        }
        *first = false;
        buf.extend_from_slice(&self.json);
    }
}

pub(super) fn write_args(
    buf: &mut Vec<u8>,
    args_key: &Key,
    args: &[Member<'_>],
    row: usize,
    first: &mut bool,
) {
    if args.iter().all(|m| m.is_null(row)) {
        return;
    }
    args_key.write(buf, first);
    buf.push(b'{');
    let mut first_arg = true;
    for member in args {
        match member {
            Member::Key(key, column) => {
                if column.is_null(row) {
                    continue;
                }
                key.write(buf, &mut first_arg);
                column.write(buf, row);
            }
            Member::Spread(spread) => {
                let Some(text) = spread.members(row) else {
                    continue;
                };
                if !text.is_empty() {
                    if !first_arg {
                        buf.push(b',');
                    }
                    first_arg = false;
                    buf.extend_from_slice(text.as_bytes());
                }
            }
        }
    }
    buf.push(b'}');
}

/// One column of a batch, downcast once.
pub(super) enum Column<'a> {
    I64(&'a Int64Array),
    I32(&'a Int32Array),
    U64(&'a UInt64Array),
    F64(&'a Float64Array),
    Bool(&'a BooleanArray),
    /// text; `true`: an enumeration's names, or numbers (`::enum`)
    Str(Text<'a>, bool),
    /// a list: its items' columns
    Items(Vec<Column<'a>>),
    Null,
}

pub(super) enum Text<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Column<'a> {
    pub(super) fn new(array: &'a dyn Array, named: bool, name: &str) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Int64 => Column::I64(array.as_primitive::<Int64Type>()),
            DataType::Int32 => Column::I32(array.as_primitive::<Int32Type>()),
            DataType::UInt64 => Column::U64(array.as_primitive::<UInt64Type>()),
            DataType::Float64 => Column::F64(array.as_primitive::<Float64Type>()),
            DataType::Boolean => Column::Bool(array.as_boolean()),
            DataType::Utf8 => Column::Str(Text::Utf8(array.as_string::<i32>()), named),
            DataType::LargeUtf8 => Column::Str(Text::Large(array.as_string::<i64>()), named),
            DataType::Utf8View => Column::Str(Text::View(array.as_string_view()), named),
            DataType::Null => Column::Null,
            other => {
                return Err(Error::Internal(format!(
                    "chrome sink: column `{name}` has type {other}, which it cannot encode"
                )))
            }
        })
    }

    pub(super) fn is_null(&self, row: usize) -> bool {
        match self {
            Column::I64(a) => a.is_null(row),
            Column::I32(a) => a.is_null(row),
            Column::U64(a) => a.is_null(row),
            Column::F64(a) => a.is_null(row),
            Column::Bool(a) => a.is_null(row),
            Column::Str(Text::Utf8(a), _) => a.is_null(row),
            Column::Str(Text::Large(a), _) => a.is_null(row),
            Column::Str(Text::View(a), _) => a.is_null(row),
            Column::Items(items) => items.iter().all(|c| c.is_null(row)),
            Column::Null => true,
        }
    }

    pub(super) fn text(&self, row: usize) -> &'a str {
        match self {
            Column::Str(Text::Utf8(a), _) => a.value(row),
            Column::Str(Text::Large(a), _) => a.value(row),
            Column::Str(Text::View(a), _) => a.value(row),
            _ => "",
        }
    }

    /// The value as Python's `float()` reads it, 0.0 where it fails.
    pub(super) fn number(&self, row: usize) -> f64 {
        match self {
            Column::I64(a) => a.value(row) as f64,
            Column::I32(a) => a.value(row) as f64,
            Column::U64(a) => a.value(row) as f64,
            Column::F64(a) => a.value(row),
            Column::Bool(a) => f64::from(u8::from(a.value(row))),
            Column::Str(..) => self.text(row).trim().parse().unwrap_or(0.0),
            Column::Items(_) | Column::Null => 0.0,
        }
    }

    pub(super) fn write(&self, buf: &mut Vec<u8>, row: usize) {
        match self {
            Column::I64(a) => write_int(buf, a.value(row)),
            Column::I32(a) => write_int(buf, a.value(row) as i64),
            Column::U64(a) => match i64::try_from(a.value(row)) {
                Ok(v) => write_int(buf, v),
                Err(_) => buf.extend_from_slice(a.value(row).to_string().as_bytes()),
            },
            Column::F64(a) => write_py_float(buf, a.value(row)),
            Column::Bool(a) => buf.extend_from_slice(if a.value(row) { b"true" } else { b"false" }),
            Column::Str(_, true) => {
                let text = self.text(row);
                let digits = text.strip_prefix('-').unwrap_or(text);
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    buf.extend_from_slice(text.as_bytes());
                } else {
                    write_str(buf, text);
                }
            }
            Column::Str(_, false) => write_str(buf, self.text(row)),
            Column::Items(items) => {
                for (i, item) in items.iter().enumerate() {
                    buf.push(if i == 0 { b'[' } else { b',' });
                    if !item.is_null(row) {
                        item.write(buf, row);
                    }
                }
                buf.push(b']');
            }
            Column::Null => buf.extend_from_slice(b"null"),
        }
    }
}
