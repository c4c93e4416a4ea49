//! Tests of ctxpack-plan: syntax errors, name resolution, the seed's semantics and the builder.

mod builder;
mod check;
mod semantics;
mod syntax;
mod work;

use ctxpack_plan::compile;

/// The rendered diagnostics of a plan that must not compile.
pub fn errors(source: &str) -> String {
    match compile(source) {
        Ok(_) => panic!("expected errors in\n{source}"),
        Err(e) => e.render("plan.ctx", source),
    }
}

/// The rendered warnings of a plan that compiles.
pub fn warnings(source: &str) -> String {
    match compile(source) {
        Ok(checked) => ctxpack_plan::render_all(&checked.warnings, "plan.ctx", source),
        Err(e) => panic!("expected no errors, got\n{}", e.render("plan.ctx", source)),
    }
}
