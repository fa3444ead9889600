//! The E, E+, E- protocol of the study with any engine (see `diff_bench` for the
//! differential engine's own options).
//!
//! ```text
//! cargo run --release -p dynalog-engines --example engine_bench -- \
//!     ENGINE PROGRAM.dl FACTS_FILE RELATION WORKERS LOAD_PERCENT
//! ```
//!
//! Reads the lines of FACTS_FILE (tab-separated symbols), keeps the first occurrence of
//! each (a duplicate line in the tail would otherwise delete a fact loaded in E), loads
//! the first LOAD_PERCENT% into RELATION and materializes (E), inserts the rest (E+),
//! deletes it again (E-) and checks that the materialization equals the one after E.
//! Prints the times, the fact counts and, for delete-rederive engines, the overdeleted
//! and rederived counts of E-.

use dynalog_analysis::{RelId, Value};
use dynalog_engines::Engine;
use dynalog_syntax::SourceFile;
use std::collections::{BTreeSet, HashSet};
use std::time::Instant;

fn total(engine: &dyn Engine) -> usize {
    (0..engine.program().relations.len())
        .map(|r| engine.len(r as RelId))
        .sum()
}

fn snapshot(engine: &dyn Engine) -> Vec<BTreeSet<Vec<Value>>> {
    (0..engine.program().relations.len())
        .map(|r| engine.facts(r as RelId).into_iter().collect())
        .collect()
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, engine_name, program, facts, relation, workers, percent] = &args[..] else {
        return Err(
            "usage: engine_bench ENGINE PROGRAM FACTS RELATION WORKERS LOAD_PERCENT".into(),
        );
    };
    let text = std::fs::read_to_string(program).map_err(|e| e.to_string())?;
    let file = SourceFile::new(program.clone(), text);
    let ast = dynalog_syntax::parse(&file).map_err(|d| d.to_string())?;
    let program = dynalog_analysis::analyse(&file, &ast).map_err(|d| d.to_string())?;
    let rel = program
        .relation_id(relation)
        .ok_or_else(|| format!("no relation {relation}"))?;
    let workers: usize = workers.parse().map_err(|_| "WORKERS: a number")?;
    let percent: usize = percent.parse().map_err(|_| "LOAD_PERCENT: a number")?;
    let mut seen = HashSet::new();
    let lines: Vec<Vec<Value>> = std::fs::read_to_string(facts)
        .map_err(|e| e.to_string())?
        .lines()
        .filter(|l| !l.is_empty() && seen.insert(l.to_string()))
        .map(|l| l.split('\t').map(|s| program.symbols.intern(s)).collect())
        .collect();
    let cut = lines.len() * percent / 100;
    let mut engine =
        dynalog_engines::create(&dynalog_engines::Config::new(engine_name, workers), program)
            .map_err(|e| e.to_string())?;

    let t = Instant::now();
    for l in &lines[..cut] {
        engine.insert(rel, l);
    }
    engine.commit().map_err(|e| e.to_string())?;
    let e = t.elapsed().as_secs_f64();
    let after_e = total(engine.as_ref());
    let before = snapshot(engine.as_ref());

    let t = Instant::now();
    for l in &lines[cut..] {
        engine.insert(rel, l);
    }
    engine.commit().map_err(|e| e.to_string())?;
    let e_plus = t.elapsed().as_secs_f64();
    let after_plus = total(engine.as_ref());

    let t = Instant::now();
    for l in &lines[cut..] {
        engine.remove(rel, l);
    }
    let stats = engine.commit().map_err(|e| e.to_string())?;
    let e_minus = t.elapsed().as_secs_f64();
    let same = snapshot(engine.as_ref()) == before;
    println!(
        "{engine_name} {percent}% ({workers} workers, {} + {} distinct lines): \
         E {e:.3} s ({after_e} facts), E+ {e_plus:.3} s ({after_plus} facts), \
         E- {e_minus:.3} s ({} facts; overdeleted {}, rederived {}); back to E: {same}",
        cut,
        lines.len() - cut,
        total(engine.as_ref()),
        stats.overdeleted,
        stats.rederived
    );
    if same {
        Ok(())
    } else {
        Err("the round trip did not return to E".into())
    }
}
