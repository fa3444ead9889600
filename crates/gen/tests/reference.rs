//! The generators against the study's reference inputs in `../shared/paper-data/` (beside
//! the checkout). LUBM(1, 0) must equal the study's file line for line; the graphs were
//! made by GTgraph's own PRNG, so for them only the size statistics are compared. Without
//! the folder (a fresh machine) each test says it is skipped and checks our own counts.

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;

fn paper_data(file: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/paper-data")
        .join(file);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: {} is not there; checking our own counts only",
            path.display()
        );
        None
    }
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort_unstable();
    v
}

#[test]
fn lubm_1_0_equals_the_study_file() {
    let mut ours = Vec::new();
    dynalog_gen::lubm(1, 0, &mut ours).unwrap();
    let ours = String::from_utf8(ours).unwrap();

    let Some(path) = paper_data("lubm1_with_tbox.nt.gz") else {
        let data: Vec<&str> = ours.lines().skip(317).collect();
        assert_eq!(data.len(), 103_074);
        assert_eq!(data.iter().collect::<HashSet<_>>().len(), 100_543);
        return;
    };
    let mut reference = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut reference)
        .unwrap();

    // As multisets of lines (duplicates count), then as sets, then in file order.
    let (a, b) = (sorted_lines(&ours), sorted_lines(&reference));
    let only_ours = a.iter().collect::<HashSet<_>>();
    let only_ref = b.iter().collect::<HashSet<_>>();
    let differ = only_ours.symmetric_difference(&only_ref).count();
    assert_eq!(
        differ, 0,
        "{differ} distinct lines are in only one of the two files"
    );
    assert_eq!(a.len(), b.len(), "line counts differ");
    assert!(a == b, "the same lines, but not as often");
    // The study loads "the first x% of the lines", so the order matters too.
    assert!(ours == reference, "the same lines in another order");
}

/// (lines, distinct edges, distinct nodes) of an edge list: `src dst [relation]` per line.
fn stats(text: &str) -> (usize, usize, usize) {
    let edges: Vec<(u32, u32)> = text
        .lines()
        .map(|l| {
            let mut f = l.split_whitespace();
            let s = f.next().unwrap().parse().unwrap();
            let d = f.next().unwrap().parse().unwrap();
            (s, d)
        })
        .collect();
    let distinct: HashSet<_> = edges.iter().copied().collect();
    let nodes: HashSet<u32> = edges.iter().flat_map(|&(s, d)| [s, d]).collect();
    (edges.len(), distinct.len(), nodes.len())
}

fn within(ours: usize, theirs: usize, fraction: f64) -> bool {
    (ours as f64 - theirs as f64).abs() <= fraction * theirs as f64
}

#[test]
fn rmat_1k_is_the_size_of_the_study_graph() {
    let mut out = Vec::new();
    dynalog_gen::rmat(1000, 10_000, 0, &mut out).unwrap();
    let (lines, distinct, nodes) = stats(std::str::from_utf8(&out).unwrap());
    assert_eq!(lines, 10_000);
    let Some(path) = paper_data("rmat1k_edges.txt") else {
        assert_eq!(nodes, 512);
        assert!(
            (8_900..=9_400).contains(&distinct),
            "{distinct} distinct edges"
        );
        return;
    };
    let (r_lines, r_distinct, r_nodes) = stats(&std::fs::read_to_string(path).unwrap());
    eprintln!(
        "RMAT-1k: ours {distinct} distinct edges over {nodes} nodes, the study's {r_distinct} over {r_nodes}"
    );
    assert_eq!(lines, r_lines);
    assert_eq!(nodes, r_nodes);
    assert!(
        within(distinct, r_distinct, 0.03),
        "{distinct} vs {r_distinct} distinct edges"
    );
}

#[test]
fn rand_1k_is_the_size_of_the_study_graph() {
    let mut out = Vec::new();
    dynalog_gen::rand(1000, 0.001, 0, &mut out).unwrap();
    let (lines, distinct, nodes) = stats(std::str::from_utf8(&out).unwrap());
    assert_eq!(lines, distinct, "G(n, p) has no duplicate edges");
    let Some(path) = paper_data("rand1k_edges.txt") else {
        assert!((841..=1157).contains(&lines), "{lines} edges");
        return;
    };
    let (r_lines, _, r_nodes) = stats(&std::fs::read_to_string(path).unwrap());
    eprintln!(
        "RAND-1k: ours {lines} edges over {nodes} nodes, the study's {r_lines} over {r_nodes}"
    );
    assert!(within(lines, r_lines, 0.10), "{lines} vs {r_lines} edges");
    assert!(within(nodes, r_nodes, 0.10), "{nodes} vs {r_nodes} nodes");
}
