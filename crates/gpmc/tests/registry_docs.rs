//! The library tables of docs/language.md and README's list of names are generated from the
//! registries (issue 51, as stanc3 prints its signatures from its one table): each is the text between
//! `<!-- generated: NAME -->` and `<!-- end generated -->`, and this test fails when it is not
//! what the registry gives now. `GPMC_BLESS=1 cargo test -p gpmc --test suite registry_docs::`
//! rewrites them.

use gpm_library::kernel::ParamRole;
use gpm_library::{Constraint, ResponseKind, HYPER_PRIORS, KERNELS, LIKELIHOODS};
use std::path::PathBuf;

fn language_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/language.md")
}

fn readme() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

/// `` `sigma` > 0 ``, `` `gamma` in (0, 2] ``; a real parameter is just named.
fn constrained(name: &str, c: Constraint) -> String {
    match c {
        Constraint::Real => format!("`{name}`"),
        Constraint::Positive => format!("`{name}` > 0"),
        Constraint::Interval { .. } => format!("`{name}` {}", c.describe()),
    }
}

fn likelihoods() -> String {
    let mut out = String::from(
        "| distribution | parameters | response `y` | log-density |\n| --- | --- | --- | --- |\n",
    );
    for l in LIKELIHOODS {
        let params: Vec<String> = l
            .params()
            .iter()
            .zip(l.constraints())
            .map(|(p, c)| constrained(p, *c))
            .collect();
        let response = match l.response() {
            ResponseKind::Real => "any real",
            ResponseKind::Positive => "real, `> 0`",
            ResponseKind::Binary => "`int[N] in {0, 1}` or `in {-1, 1}`",
            ResponseKind::Count => "`int[N]`, whole and `≥ 0`",
            ResponseKind::Category => "`int[N] in 1..C`",
        };
        out += &format!(
            "| `{}({})` | {} | {response} | `{}` |\n",
            l.name(),
            l.params().join(", "),
            params.join(", "),
            l.formula()
        );
    }
    out
}

fn kernels() -> String {
    let mut out = String::from("| kernel | parameters | `k(x, x')` |\n| --- | --- | --- |\n");
    for k in KERNELS {
        let names: Vec<&str> = k.params().iter().map(|p| p.name).collect();
        let params: Vec<String> = k
            .params()
            .iter()
            .map(|p| match p.role {
                ParamRole::Lengthscale => format!("`{}` > 0, scalar or ARD", p.name),
                ParamRole::Constrained(c) => constrained(p.name, c),
                ParamRole::Real { default } => format!("`{}`, default {default}", p.name),
            })
            .collect();
        let aliases: Vec<String> = k
            .aliases()
            .iter()
            .map(|a| format!(", alias `{a}`"))
            .collect();
        out += &format!(
            "| `{}({})`{} | {} | `{}` |\n",
            k.name(),
            names.join(", "),
            aliases.concat(),
            if params.is_empty() {
                "none".to_string()
            } else {
                params.join(", ")
            },
            k.formula()
        );
    }
    out
}

fn hyper_priors() -> String {
    let mut out = String::from(
        "| prior | parameters | support | log-density up to a constant |\n| --- | --- | --- | --- |\n",
    );
    for h in HYPER_PRIORS {
        let names: Vec<&str> = h.params().iter().map(|p| p.name).collect();
        let params: Vec<String> = h
            .params()
            .iter()
            .map(|p| constrained(p.name, p.kind))
            .collect();
        let support = match h.signature().support {
            None => "`[lo, hi]`".to_string(),
            Some((lo, hi)) if lo.is_infinite() && hi.is_infinite() => "the real line".to_string(),
            Some((lo, hi)) if hi.is_infinite() => format!("`[{lo}, ∞)`"),
            Some((lo, hi)) => format!("`[{lo}, {hi}]`"),
        };
        out += &format!(
            "| `{}({})` | {} | {support} | `{}` |\n",
            h.name(),
            names.join(", "),
            if params.is_empty() {
                "none".to_string()
            } else {
                params.join(", ")
            },
            h.formula()
        );
    }
    out
}

/// README's one paragraph of every library name, latent priors included.
fn names() -> String {
    let quoted = |v: Vec<String>| {
        v.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let likelihoods = quoted(LIKELIHOODS.iter().map(|l| l.name().to_string()).collect());
    let kernels = quoted(
        KERNELS
            .iter()
            .flat_map(|k| std::iter::once(k.name()).chain(k.aliases().iter().copied()))
            .map(str::to_string)
            .collect(),
    );
    let priors = quoted(HYPER_PRIORS.iter().map(|h| h.name().to_string()).collect());
    let latents = quoted(gpm_ir::latent_prior_signatures());
    format!(
        "- likelihoods: {likelihoods};\n- kernels: {kernels};\n- hyperparameter priors: {priors};\n- latent priors: {latents}.\n"
    )
}

/// `text` with the generated section `name` replaced by `table`, and whether it changed.
fn replace_section(text: &str, name: &str, table: &str) -> (String, bool) {
    let open = format!("<!-- generated: {name} -->\n");
    let close = "<!-- end generated -->";
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no `{}` in the docs", open.trim()))
        + open.len();
    let end = start + text[start..].find(close).expect("an end marker");
    let mut out = text[..start].to_string();
    out += table;
    out += &text[end..];
    let changed = text[start..end] != *table;
    (out, changed)
}

#[test]
fn the_library_tables_are_the_registries() {
    let mut stale = Vec::new();
    for (path, sections) in [
        (
            language_md(),
            vec![
                ("likelihoods", likelihoods()),
                ("kernels", kernels()),
                ("hyperparameter priors", hyper_priors()),
            ],
        ),
        (readme(), vec![("names", names())]),
    ] {
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (name, table) in sections {
            let (new, changed) = replace_section(&text, name, &table);
            if changed {
                stale.push(format!(
                    "{}: {name}",
                    path.file_name()
                        .map_or(String::new(), |f| f.to_string_lossy().into_owned())
                ));
            }
            text = new;
        }
        if std::env::var("GPMC_BLESS").is_ok() {
            std::fs::write(&path, text).unwrap();
        }
    }
    assert!(
        stale.is_empty() || std::env::var("GPMC_BLESS").is_ok(),
        "generated sections not the registries': {stale:?}; run `GPMC_BLESS=1 cargo test -p gpmc --test suite registry_docs::` and commit the change"
    );
}

/// The check can fail: a row edited by hand, or an entry the docs lack, is stale.
#[test]
fn a_hand_edited_or_missing_row_is_stale() {
    let text = std::fs::read_to_string(language_md()).unwrap();
    let edited = text.replacen("| `poisson(rate)` |", "| `poisson(lambda)` |", 1);
    assert_ne!(edited, text);
    assert!(replace_section(&edited, "likelihoods", &likelihoods()).1);
    let missing = text.replacen("| `gamma_exponential(", "| `gamma_exp(", 1);
    assert!(replace_section(&missing, "kernels", &kernels()).1);
    assert!(!replace_section(&text, "kernels", &kernels()).1);
}
