//! Named checks: each states one promise of a module and tests it. A list
//! of them runs in order against one context, each reported by name, and
//! stops at the first that does not hold (later checks may rely on the
//! state earlier ones leave).

use anyhow::{bail, Result};

/// One named check against a context `C`: what it states, and its test.
pub(crate) type Check<C> = (&'static str, fn(&C) -> Result<()>);

/// Reports `result` as the outcome of the check `name`: `ok   <name>`, or
/// an error `FAIL <name>: <why>`.
pub(crate) fn check(name: &str, result: Result<()>) -> Result<()> {
    match result {
        Ok(()) => {
            println!("ok   {name}");
            Ok(())
        }
        Err(err) => bail!("FAIL {name}: {err:#}"),
    }
}

/// Runs `checks` in order against `ctx`, each reported by name.
pub(crate) fn run_checks<C>(ctx: &C, checks: &[Check<C>]) -> Result<()> {
    for (name, test) in checks {
        check(name, test(ctx))?;
    }
    Ok(())
}
