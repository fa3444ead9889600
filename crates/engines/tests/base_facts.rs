//! `Engine::is_base` on every engine: a base fact is one inserted (or an inline fact)
//! and not removed, as of the last commit, whether or not it is also derived.

use dynalog_engines::{Config, ENGINE_NAMES, Engine, create};
use dynalog_syntax::SourceFile;

const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
edge(9, 9).\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";

#[test]
fn base_facts_are_those_inserted_and_not_removed_as_of_the_last_commit() {
    for &name in ENGINE_NAMES {
        let file = SourceFile::new("tc.dl", TC);
        let ast = dynalog_syntax::parse(&file).expect("parses");
        let program = dynalog_analysis::analyse(&file, &ast).expect("analyses");
        let edge = program.relation_id("edge").expect("edge");
        let path = program.relation_id("path").expect("path");
        let mut engine: Box<dyn Engine> = create(&Config::new(name, 2), program).expect("engine");
        engine.insert(edge, &[1, 2]);
        engine.insert(edge, &[2, 3]);
        // Base and derived at once: path(1, 3) is derived through edge(1, 2), edge(2, 3).
        engine.insert(path, &[1, 3]);
        assert!(
            !engine.is_base(edge, &[1, 2]),
            "{name}: staged, not committed"
        );
        engine.commit().expect("commit");
        assert!(engine.is_base(edge, &[9, 9]), "{name}: an inline fact");
        assert!(engine.is_base(edge, &[1, 2]), "{name}");
        assert!(
            engine.is_base(path, &[1, 3]),
            "{name}: base, and derived too"
        );
        assert!(engine.contains(path, &[1, 2]), "{name}");
        assert!(!engine.is_base(path, &[1, 2]), "{name}: derived only");
        assert!(!engine.is_base(edge, &[3, 4]), "{name}: absent");
        assert!(!engine.is_base(edge, &[1, 2, 3]), "{name}: wrong arity");
        assert!(!engine.is_base(99, &[1, 2]), "{name}: no such relation");
        engine.remove(edge, &[1, 2]);
        engine.remove(path, &[1, 3]);
        engine.commit().expect("commit");
        assert!(!engine.is_base(edge, &[1, 2]), "{name}: removed");
        assert!(!engine.is_base(path, &[1, 3]), "{name}: removed");
        assert!(!engine.contains(path, &[1, 3]), "{name}: nor derived now");
    }
}

/// A caller may ask `is_base` and `contains` while it goes through a relation's facts
/// with `for_each_fact` (`rdf materialize` does, to write only the inferred triples):
/// no engine may block there. The `diff` engine answers both from the workers' tables
/// for a relation no rule derives; the check runs in a thread, so a deadlock fails it
/// instead of hanging the suite.
#[test]
fn base_facts_can_be_asked_while_going_through_the_facts() {
    for &name in ENGINE_NAMES {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let file = SourceFile::new("tc.dl", TC);
            let ast = dynalog_syntax::parse(&file).expect("parses");
            let program = dynalog_analysis::analyse(&file, &ast).expect("analyses");
            let edge = program.relation_id("edge").expect("edge");
            let path = program.relation_id("path").expect("path");
            let mut engine: Box<dyn Engine> =
                create(&Config::new(name, 2), program).expect("engine");
            for i in 0..50 {
                engine.insert(edge, &[i, i + 1]);
            }
            engine.commit().expect("commit");
            let (mut base, mut present, mut derived) = (0, 0, 0);
            for rel in [edge, path] {
                engine.for_each_fact(rel, &mut |t| {
                    base += usize::from(engine.is_base(rel, t) && engine.is_base(edge, t));
                    present += usize::from(engine.contains(rel, t) && engine.contains(path, t));
                    derived += usize::from(!engine.is_base(rel, t));
                });
            }
            let _ = done.send((base, present, derived));
        });
        let got = finished.recv_timeout(std::time::Duration::from_secs(120));
        // edge: the chain 0 → 50 and the program's 9 → 9, each also a path; path: the
        // chain's pairs and 9 → 9, none a base fact.
        let (edges, paths) = (51, 51 * 50 / 2 + 1);
        assert_eq!(
            got,
            Ok((edges, edges + paths, paths)),
            "{name}: blocked, or wrong answers"
        );
    }
}
