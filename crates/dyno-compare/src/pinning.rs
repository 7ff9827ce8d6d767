//! Core isolation: the CPUs a subject's node and a workload's load run on, and a quiet
//! machine before every round.
//!
//! ```toml
//! [[subject]]
//! name = "v1.0"
//! cpus = "1"            # the node's whole process tree on CPU 1
//! [[workload]]
//! [workload.load]
//! cpus = "0"            # the load generator on CPU 0
//! ```
//!
//! The CPU set is applied in the child before it executes the program
//! (`sched_setaffinity`), so every thread and process the node or load starts inherits it.
//! While an execution runs, dyno's own thread (the /proc sampler, the scrapes, the output
//! readers it starts) keeps off the node's CPUs, and off the load's too when CPUs are
//! left; so the node's CPUs serve the node alone. A set naming a CPU dyno may not run on
//! (offline, outside its cgroup's cpuset, or beyond the machine) is refused before
//! anything starts.
//!
//! Before every round dyno looks at the machine for a moment: if more than
//! [`crate::session::BUSY_WARNING`] of its CPU time is busy, it warns and names the
//! busiest processes, since their work lands in the round's numbers.

pub use dyno_proc::busy::BusyProcess;

/// The CPUs dyno may run its children on: its own affinity mask, else the online CPUs.
pub fn machine_cpus() -> Vec<usize> {
    dyno_proc::affinity::allowed_cpus()
        .or_else(dyno_proc::host::online_cpus)
        .unwrap_or_default()
}

/// Parses a `cpus` value (`"0-3,6"`) and checks every CPU is one of `machine` (the CPUs
/// dyno may use). `Err` says what is wrong, naming the CPUs there are.
pub fn parse_cpus(text: &str, machine: &[usize]) -> Result<Vec<usize>, String> {
    let mut cpus = dyno_proc::host::parse_cpu_list(text.trim())
        .ok_or_else(|| format!("`{text}` is not a CPU list (e.g. \"1\", \"2-3\" or \"0,2\")"))?;
    cpus.sort_unstable();
    cpus.dedup();
    let outside: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !machine.contains(c))
        .collect();
    if !outside.is_empty() {
        return Err(format!(
            "CPU {} {} not on this machine (dyno may use CPUs {})",
            list(&outside),
            if outside.len() == 1 { "is" } else { "are" },
            list(machine)
        ));
    }
    Ok(cpus)
}

/// `0-3,6`: a CPU list as Linux writes it.
pub fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "none".into()
    } else {
        dyno_proc::host::format_cpu_list(cpus)
    }
}

/// The CPUs dyno's own thread keeps to while a node on `node` and a load on `load` run:
/// every CPU of `machine` but theirs; when that leaves none, every CPU but the node's;
/// `None` when nothing is pinned or nothing would be left.
pub fn own_cpus(
    machine: &[usize],
    node: Option<&[usize]>,
    load: Option<&[usize]>,
) -> Option<Vec<usize>> {
    if node.is_none() && load.is_none() {
        return None;
    }
    let keep = |avoid: &[&[usize]]| -> Vec<usize> {
        machine
            .iter()
            .copied()
            .filter(|c| !avoid.iter().any(|a| a.contains(c)))
            .collect()
    };
    let (node, load) = (node.unwrap_or_default(), load.unwrap_or_default());
    let clear = keep(&[node, load]);
    if !clear.is_empty() {
        return Some(clear);
    }
    Some(keep(&[node])).filter(|k| !k.is_empty())
}

/// How busy the machine was before a round, and who was busiest.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    /// Share of all CPU time that was busy.
    pub share: f64,
    /// The busiest processes, busiest first (at most 3).
    pub processes: Vec<BusyProcess>,
}

impl Busy {
    /// "63% busy; busiest: cargo (pid 4242, 180% of a core), rustc (pid 77, 20% ...)".
    pub fn sentence(&self) -> String {
        let who: Vec<String> = self
            .processes
            .iter()
            .map(|p| {
                format!(
                    "{} (pid {}, {:.0}% of a core)",
                    p.name,
                    p.pid,
                    p.cpu_share * 100.0
                )
            })
            .collect();
        let who = if who.is_empty() {
            String::new()
        } else {
            format!("; busiest: {}", who.join(", "))
        };
        format!("{:.0}% busy{who}", self.share * 100.0)
    }
}

/// Looks at the machine for `window`: `Some` when more than `threshold` of its CPU time
/// was busy, naming the busiest processes (dyno itself left out).
pub fn busy_machine(window: std::time::Duration, threshold: f64) -> Option<Busy> {
    let reading = dyno_proc::busy::look(window)?;
    (reading.share > threshold).then(|| Busy {
        share: reading.share,
        processes: reading.processes.into_iter().take(3).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets_outside_the_machine_are_refused() {
        let machine = [0, 1];
        assert_eq!(parse_cpus("1", &machine), Ok(vec![1]));
        assert_eq!(parse_cpus("1,0,1", &machine), Ok(vec![0, 1]));
        let e = parse_cpus("1-3", &machine).unwrap_err();
        assert_eq!(e, "CPU 2-3 are not on this machine (dyno may use CPUs 0-1)");
        let e = parse_cpus("x", &machine).unwrap_err();
        assert!(e.contains("not a CPU list"), "{e}");
        assert_eq!(list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    #[test]
    fn dyno_keeps_off_the_pinned_cpus() {
        let m = [0, 1, 2, 3];
        assert_eq!(own_cpus(&m, None, None), None);
        assert_eq!(own_cpus(&m, Some(&[2, 3]), Some(&[1])), Some(vec![0]));
        // Node and load take every CPU: dyno shares the load's, never the node's.
        assert_eq!(own_cpus(&[0, 1], Some(&[1]), Some(&[0])), Some(vec![0]));
        assert_eq!(own_cpus(&[0, 1], Some(&[0, 1]), None), None);
    }

    #[test]
    fn a_busy_machine_names_its_busiest_processes() {
        let b = Busy {
            share: 0.63,
            processes: vec![BusyProcess {
                pid: 4242,
                name: "cargo".into(),
                cpu_share: 1.8,
            }],
        };
        assert_eq!(
            b.sentence(),
            "63% busy; busiest: cargo (pid 4242, 180% of a core)"
        );
    }
}
