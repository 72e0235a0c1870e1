//! Shell input: lines in, items out. A statement ends at a `;` outside quotes and comments
//! and may span lines; a dot-command is one line that starts with `.` between statements.

/// One thing for the shell to do, with the line of its source it starts on (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// SQL text: one or more statements.
    Sql { text: String, line: usize },
    /// A dot-command line, e.g. `.mode csv`.
    Dot { text: String, line: usize },
}

impl Item {
    pub fn line(&self) -> usize {
        match self {
            Item::Sql { line, .. } | Item::Dot { line, .. } => *line,
        }
    }
}

/// Whether `text` is ready to run as typed at the prompt: blank, a dot-command, or SQL whose
/// last statement is ended by `;`.
pub fn is_ready(text: &str) -> bool {
    let trimmed = text.trim_start();
    trimmed.is_empty() || trimmed.starts_with('.') || ends_statement(text)
}

/// Whether the last thing in `sql` outside comments is a `;` outside quotes.
pub fn ends_statement(sql: &str) -> bool {
    #[derive(PartialEq)]
    enum State {
        Code,
        Quoted(char),
        LineComment,
        BlockComment(usize),
    }
    let mut state = State::Code;
    let mut ended = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Code => match c {
                '\'' | '"' | '`' => {
                    state = State::Quoted(c);
                    ended = false;
                }
                '-' if chars.peek() == Some(&'-') => {
                    chars.next();
                    state = State::LineComment;
                }
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    state = State::BlockComment(1);
                }
                ';' => ended = true,
                c if c.is_whitespace() => {}
                _ => ended = false,
            },
            // A doubled quote inside a quoted text leaves and re-enters: same state.
            State::Quoted(q) if c == q => state = State::Code,
            State::Quoted(_) => {}
            State::LineComment if c == '\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment(depth) => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    state = match depth {
                        1 => State::Code,
                        d => State::BlockComment(d - 1),
                    };
                } else if c == '/' && chars.peek() == Some(&'*') {
                    chars.next();
                    state = State::BlockComment(depth + 1);
                }
            }
        }
    }
    ended && matches!(state, State::Code | State::LineComment)
}

/// Cuts a script, fed line by line, into [`Item`]s.
#[derive(Default)]
pub struct Splitter {
    pending: String,
    pending_line: usize,
    line: usize,
}

impl Splitter {
    /// Feed the next line (without its newline); returns the item it completes, if any.
    pub fn push(&mut self, text: &str) -> Option<Item> {
        self.line += 1;
        if self.pending.trim().is_empty() {
            let trimmed = text.trim();
            if trimmed.starts_with('.') {
                self.pending.clear();
                return Some(Item::Dot {
                    text: trimmed.to_string(),
                    line: self.line,
                });
            }
            if trimmed.is_empty() {
                return None;
            }
            self.pending.clear();
            self.pending_line = self.line;
        }
        self.pending.push_str(text);
        self.pending.push('\n');
        if ends_statement(&self.pending) {
            return self.take();
        }
        None
    }

    /// What is left at the end of the script: a last statement without its `;`.
    pub fn finish(mut self) -> Option<Item> {
        self.take()
    }

    fn take(&mut self) -> Option<Item> {
        let text = std::mem::take(&mut self.pending);
        if text.trim().is_empty() {
            return None;
        }
        Some(Item::Sql {
            text,
            line: self.pending_line,
        })
    }
}

/// Every item of a whole script.
pub fn split(script: &str) -> Vec<Item> {
    let mut splitter = Splitter::default();
    let mut items: Vec<Item> = script.lines().filter_map(|l| splitter.push(l)).collect();
    items.extend(splitter.finish());
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_ends_at_a_semicolon_outside_quotes_and_comments() {
        assert!(ends_statement("select 1;"));
        assert!(ends_statement("select 1; -- done"));
        assert!(ends_statement("select 1 /* a */ ;  \n"));
        assert!(!ends_statement("select ';'"));
        assert!(!ends_statement("select \"a;\" from t"));
        assert!(!ends_statement("select 1 -- not yet;"));
        assert!(!ends_statement("select 1 /* ; */"));
        assert!(!ends_statement("select 1; /* open"));
        assert!(!ends_statement("select 1; select 2"));
        assert!(ends_statement("select 'it''s';"));
    }

    #[test]
    fn blank_and_dot_lines_are_ready_at_the_prompt() {
        assert!(is_ready(""));
        assert!(is_ready("  .tables"));
        assert!(!is_ready("select 1\nfrom kernel"));
        assert!(is_ready("select 1\nfrom kernel;"));
    }

    #[test]
    fn a_script_splits_into_statements_and_dot_commands_with_their_lines() {
        let items = split(
            ".mode csv\n\nselect 1\n  as a;\n.tables\nselect '.not a dot';\n-- a note\nselect 2",
        );
        assert_eq!(
            items,
            vec![
                Item::Dot {
                    text: ".mode csv".into(),
                    line: 1
                },
                Item::Sql {
                    text: "select 1\n  as a;\n".into(),
                    line: 3
                },
                Item::Dot {
                    text: ".tables".into(),
                    line: 5
                },
                Item::Sql {
                    text: "select '.not a dot';\n".into(),
                    line: 6
                },
                Item::Sql {
                    text: "-- a note\nselect 2\n".into(),
                    line: 7
                },
            ]
        );
    }

    #[test]
    fn a_dot_line_inside_a_statement_is_sql() {
        let items = split("select\n.5 as half;");
        assert_eq!(
            items,
            vec![Item::Sql {
                text: "select\n.5 as half;\n".into(),
                line: 1
            }]
        );
    }
}
