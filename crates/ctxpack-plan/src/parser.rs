//! A recursive-descent parser from tokens to the [`Plan`] tree.
//!
//! ```text
//! plan      = [ "flow" NAME NL INDENT statement* DEDENT ] | statement*
//! statement = NAME "=" NAME "(" [ arg { "," arg } [ "," ] ] ")" NL
//!           | "ctx" NAME NL INDENT setting+ DEDENT
//!           | NAME "+=" names NL
//!           | "emit" names NL
//! arg       = [ NAME ":" ] literal
//! literal   = STRING | INT [ ".." INT ] | "true" | "false" | JSON
//! setting   = ( "purpose" STRING | "budget" INT | "meter" NAME
//!             | "include" names | "exclude" names | "pin" names ) NL
//! names     = NAME { "," NAME }
//! ```

use crate::ast::{
    Arg, Call, CtxBlock, CtxLine, CtxSetting, Ident, Literal, Plan, Spanned, Statement,
};
use crate::diag::{Diagnostic, Span};
use crate::lexer::{Token, TokenKind, lex};

/// Words that cannot be bound as names.
pub const KEYWORDS: [&str; 5] = ["flow", "ctx", "emit", "true", "false"];

/// Parses a plan. The first syntax error is returned.
pub fn parse(source: &str) -> Result<Plan, Diagnostic> {
    let tokens = lex(source)?;
    Parser { tokens, at: 0 }.plan()
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        // `lex` always ends with Eof, and nothing moves past it.
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn peek_kind(&self) -> &TokenKind {
        &self.peek().kind
    }

    fn nth_kind(&self, n: usize) -> &TokenKind {
        &self.tokens[(self.at + n).min(self.tokens.len() - 1)].kind
    }

    fn bump(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != TokenKind::Eof {
            self.at += 1;
        }
        token
    }

    fn eat(&mut self, kind: &TokenKind) -> Option<Token> {
        (self.peek_kind() == kind).then(|| self.bump())
    }

    fn unexpected(&self, expected: &str) -> Diagnostic {
        let token = self.peek();
        Diagnostic::error(
            format!("expected {expected}, found {}", token.kind.describe()),
            token.span,
        )
    }

    fn expect(&mut self, kind: &TokenKind, expected: &str) -> Result<Token, Diagnostic> {
        self.eat(kind).ok_or_else(|| self.unexpected(expected))
    }

    fn expect_newline(&mut self, after: &str) -> Result<(), Diagnostic> {
        self.expect(
            &TokenKind::Newline,
            &format!("the end of the line after {after}"),
        )
        .map(drop)
    }

    fn name(&mut self, expected: &str) -> Result<Ident, Diagnostic> {
        match self.peek_kind().clone() {
            TokenKind::Name(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// A name that can be bound or referred to: not a keyword.
    fn binding_name(&mut self, expected: &str) -> Result<Ident, Diagnostic> {
        let ident = self.name(expected)?;
        if KEYWORDS.contains(&ident.name.as_str()) {
            return Err(Diagnostic::error(
                format!("`{}` is a keyword, not a name", ident.name),
                ident.span,
            ));
        }
        Ok(ident)
    }

    fn names(&mut self, expected: &str) -> Result<Vec<Ident>, Diagnostic> {
        let mut names = vec![self.binding_name(expected)?];
        while self.eat(&TokenKind::Comma).is_some() {
            names.push(self.binding_name("a name after `,`")?);
        }
        Ok(names)
    }

    fn plan(mut self) -> Result<Plan, Diagnostic> {
        if *self.peek_kind() == TokenKind::Indent {
            return Err(
                Diagnostic::error("unexpected indentation", self.peek().span)
                    .with_help("the first line of a plan starts at column 1"),
            );
        }
        let mut flow = None;
        let statements = if *self.peek_kind() == TokenKind::Name("flow".into()) {
            self.bump();
            let name = self.name("the flow's name after `flow`")?;
            self.expect_newline("the flow's name")?;
            if self.eat(&TokenKind::Indent).is_none() {
                return Err(self.unexpected(&format!(
                    "an indented block of statements under `flow {}`",
                    name.name
                )));
            }
            flow = Some(name);
            let statements = self.statements()?;
            self.expect(&TokenKind::Dedent, "the end of the flow block")?;
            statements
        } else {
            self.statements()?
        };
        if *self.peek_kind() != TokenKind::Eof {
            return Err(self
                .unexpected("the end of the plan")
                .with_help("every statement of a flow is indented under its `flow` line"));
        }
        Ok(Plan { flow, statements })
    }

    fn statements(&mut self) -> Result<Vec<Statement>, Diagnostic> {
        let mut statements = Vec::new();
        while !matches!(self.peek_kind(), TokenKind::Dedent | TokenKind::Eof) {
            statements.push(self.statement()?);
        }
        Ok(statements)
    }

    fn statement(&mut self) -> Result<Statement, Diagnostic> {
        let expected = "a statement (`NAME = source(…)`, `ctx NAME`, `NAME += …` or `emit NAME`)";
        let TokenKind::Name(word) = self.peek_kind().clone() else {
            if *self.peek_kind() == TokenKind::Indent {
                return Err(
                    Diagnostic::error("unexpected indentation", self.peek().span).with_help(
                        "only the settings of a `ctx` block and the body of a `flow` are indented",
                    ),
                );
            }
            return Err(self.unexpected(expected));
        };
        if matches!(word.as_str(), "ctx" | "emit")
            && matches!(self.nth_kind(1), TokenKind::Eq | TokenKind::PlusEq)
        {
            return Err(Diagnostic::error(
                format!("`{word}` is a keyword, not a name"),
                self.peek().span,
            )
            .with_help("choose another name"));
        }
        match word.as_str() {
            "ctx" => self.ctx_block().map(Statement::Ctx),
            "emit" => {
                let start = self.bump().span;
                let names = self.names("the name of a ctx to emit")?;
                let span = start.to(names.last().map_or(start, |n| n.span));
                self.expect_newline("the emitted names")?;
                Ok(Statement::Emit { names, span })
            }
            "flow" => Err(Diagnostic::error(
                "a plan has one `flow`, on its first line",
                self.peek().span,
            )),
            _ => {
                let name = self.binding_name(expected)?;
                match self.peek_kind() {
                    TokenKind::Eq => {
                        self.bump();
                        let call = self.call()?;
                        self.expect_newline("`)`")?;
                        Ok(Statement::Bind { name, call })
                    }
                    TokenKind::PlusEq => {
                        self.bump();
                        let names = self.names("the name of a member to add after `+=`")?;
                        let span = name.span.to(names.last().map_or(name.span, |n| n.span));
                        self.expect_newline("the added names")?;
                        Ok(Statement::Append {
                            target: name,
                            names,
                            span,
                        })
                    }
                    _ => Err(self.unexpected(&format!("`=` or `+=` after `{}`", name.name))),
                }
            }
        }
    }

    fn call(&mut self) -> Result<Call, Diagnostic> {
        let function = self.name("a source such as `read(\"path\")`")?;
        self.expect(
            &TokenKind::LParen,
            &format!("`(` after `{}`", function.name),
        )?;
        let mut args = Vec::new();
        let close = loop {
            if let Some(close) = self.eat(&TokenKind::RParen) {
                break close;
            }
            args.push(self.arg()?);
            if self.eat(&TokenKind::Comma).is_none() {
                break self.expect(&TokenKind::RParen, "`,` or `)`")?;
            }
        };
        let span = function.span.to(close.span);
        Ok(Call {
            function,
            args,
            span,
        })
    }

    fn arg(&mut self) -> Result<Arg, Diagnostic> {
        let name = match (self.peek_kind(), self.nth_kind(1)) {
            (TokenKind::Name(_), TokenKind::Colon) => {
                let name = self.name("an argument name")?;
                self.bump();
                Some(name)
            }
            _ => None,
        };
        let value = self.literal()?;
        Ok(Arg { name, value })
    }

    fn literal(&mut self) -> Result<Spanned<Literal>, Diagnostic> {
        let token = self.peek().clone();
        let value = match token.kind {
            TokenKind::Str(s) => Literal::Str(s),
            TokenKind::Json(v) => Literal::Json(v),
            TokenKind::Name(n) if n == "true" => Literal::Bool(true),
            TokenKind::Name(n) if n == "false" => Literal::Bool(false),
            TokenKind::Int(start) => {
                self.bump();
                if self.eat(&TokenKind::DotDot).is_none() {
                    return Ok(Spanned {
                        value: Literal::Int(start),
                        span: token.span,
                    });
                }
                let end_token = self.peek().clone();
                let TokenKind::Int(end) = end_token.kind else {
                    return Err(self.unexpected("the last line of the range after `..`"));
                };
                self.bump();
                return Ok(Spanned {
                    value: Literal::Range(start, end),
                    span: token.span.to(end_token.span),
                });
            }
            TokenKind::Name(n) => {
                return Err(Diagnostic::error(
                    format!("expected a value, found the name `{n}`"),
                    token.span,
                )
                .with_help("arguments are literals: strings, numbers, ranges, true/false or JSON; quote text"));
            }
            _ => return Err(self.unexpected("a value")),
        };
        self.bump();
        Ok(Spanned {
            value,
            span: token.span,
        })
    }

    fn ctx_block(&mut self) -> Result<CtxBlock, Diagnostic> {
        let start = self.bump().span;
        let name = self.binding_name("the ctx's name after `ctx`")?;
        let span = start.to(name.span);
        self.expect_newline("the ctx's name")?;
        if self.eat(&TokenKind::Indent).is_none() {
            return Err(self
                .unexpected(&format!(
                    "an indented block of settings under `ctx {}`",
                    name.name
                ))
                .with_help("settings are purpose, budget, meter, include, exclude and pin"));
        }
        let mut lines = Vec::new();
        while self.eat(&TokenKind::Dedent).is_none() {
            lines.push(self.ctx_line()?);
        }
        Ok(CtxBlock { name, lines, span })
    }

    fn ctx_line(&mut self) -> Result<CtxLine, Diagnostic> {
        if *self.peek_kind() == TokenKind::Indent {
            return Err(
                Diagnostic::error("unexpected indentation", self.peek().span)
                    .with_help("the settings of a ctx block are indented alike"),
            );
        }
        let keyword =
            self.name("a ctx setting (purpose, budget, meter, include, exclude or pin)")?;
        let setting = match keyword.name.as_str() {
            "purpose" => {
                let token = self.peek().clone();
                let TokenKind::Str(text) = token.kind else {
                    return Err(self.unexpected("the purpose as a string after `purpose`"));
                };
                self.bump();
                CtxSetting::Purpose(Spanned {
                    value: text,
                    span: token.span,
                })
            }
            "budget" => {
                let token = self.peek().clone();
                let TokenKind::Int(n) = token.kind else {
                    return Err(self.unexpected("a whole number after `budget`"));
                };
                self.bump();
                CtxSetting::Budget(Spanned {
                    value: n,
                    span: token.span,
                })
            }
            "meter" => CtxSetting::Meter(self.name("a meter name after `meter` (e.g. o200k)")?),
            "include" => CtxSetting::Include(self.names("a name to include")?),
            "exclude" => CtxSetting::Exclude(self.names("a name to exclude")?),
            "pin" => CtxSetting::Pin(self.names("a name to pin")?),
            other => {
                return Err(Diagnostic::error(
                    format!("unknown ctx setting `{other}`"),
                    keyword.span,
                )
                .with_help("settings are purpose, budget, meter, include, exclude and pin"));
            }
        };
        self.expect_newline(&format!("the `{}` setting", keyword.name))?;
        Ok(CtxLine { keyword, setting })
    }
}

/// The span a statement covers, for messages about the whole statement.
pub(crate) fn statement_span(statement: &Statement) -> Span {
    match statement {
        Statement::Bind { name, call } => name.span.to(call.span),
        Statement::Ctx(block) => block.span,
        Statement::Append { span, .. } | Statement::Emit { span, .. } => *span,
    }
}
