//! The commands that reproduce a profile-guided variant by hand: the snippet of a PGO
//! winner is this recipe, not only a profile section.

use super::{training_lines, PgoJob, BOLT_OPTIONS};
use std::path::Path;

/// The commands that reproduce a PGO variant by hand, after its `[profile]` section is in
/// Cargo.toml: instrumented build, training, merge, optimised build (and BOLT).
#[allow(clippy::too_many_arguments)]
pub fn recipe(
    build_command: impl Fn(&str) -> String,
    profile: &str,
    bin: &str,
    host: &str,
    job: &PgoJob,
    profdata: &str,
    bolt: Option<(&str, &str)>,
) -> String {
    let data = "/tmp/pgo-data";
    let built = format!("target/{host}/{profile}/{bin}");
    let mut out = vec![
        "# 1. instrumented build (--target keeps build scripts uninstrumented)".to_string(),
        match bolt {
            Some(_) => format!("rm -rf {data} /tmp/bolt-data && mkdir -p {data} /tmp/bolt-data"),
            None => format!("rm -rf {data} && mkdir -p {data}"),
        },
        format!(
            "{} --target {host}",
            build_command(&format!("-Cprofile-generate={data}"))
        ),
        "# 2. training".to_string(),
    ];
    for line in training_lines(job, Path::new(&built)) {
        out.push(line.join(" "));
    }
    out.push("# 3. merge, with the llvm-profdata of the toolchain's LLVM".into());
    out.push(format!(
        "{profdata} merge -o {data}/merged.profdata {data}/*.profraw"
    ));
    out.push("# 4. the optimised build".into());
    let mut flags = format!("-Cprofile-use={data}/merged.profdata");
    if bolt.is_some() {
        flags.push_str(" -Clink-arg=-Wl,--emit-relocs");
    }
    out.push(format!("{} --target {host}", build_command(&flags)));
    if let Some((llvm_bolt, merge)) = bolt {
        out.push("# 5. BOLT: instrument, train again, merge, optimise".into());
        out.push(format!(
            "{llvm_bolt} {built} -instrument --instrumentation-file=/tmp/bolt-data/prof --instrumentation-file-append-pid -o {built}-instrumented"
        ));
        for line in training_lines(job, Path::new(&format!("{built}-instrumented"))) {
            out.push(line.join(" "));
        }
        out.push(format!(
            "{merge} -o /tmp/bolt-data/merged.fdata /tmp/bolt-data/*.fdata"
        ));
        out.push(format!(
            "{llvm_bolt} {built} -o {built}-bolt -data=/tmp/bolt-data/merged.fdata {}",
            BOLT_OPTIONS.join(" ")
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Pgo;

    #[test]
    fn the_recipe_lists_every_step() {
        let job = PgoJob {
            mode: Pgo::On,
            training: vec![vec!["{bin}".into(), "--small".into()]],
            same_input: false,
            timeout_s: 60.0,
        };
        let r = recipe(
            |f| format!("RUSTFLAGS=\"{f}\" cargo build --profile production"),
            "production",
            "node",
            "x86_64-unknown-linux-gnu",
            &job,
            "llvm-profdata",
            None,
        );
        assert!(r.contains("RUSTFLAGS=\"-Cprofile-generate=/tmp/pgo-data\" cargo build --profile production --target x86_64-unknown-linux-gnu"), "{r}");
        assert!(
            r.contains("target/x86_64-unknown-linux-gnu/production/node --small"),
            "{r}"
        );
        assert!(
            r.contains("llvm-profdata merge -o /tmp/pgo-data/merged.profdata"),
            "{r}"
        );
        assert!(
            r.contains("-Cprofile-use=/tmp/pgo-data/merged.profdata\" cargo"),
            "{r}"
        );
        assert!(!r.contains("bolt"), "{r}");
    }
}
