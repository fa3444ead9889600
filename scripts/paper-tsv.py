#!/usr/bin/env python3
"""Convert the study's inputs in ../shared/paper-data to tab-separated fact files.

For the ignored round-trip tests and `dynalog run` on the study's own rule files (users
read the LUBM graph directly with `dynalog rdf materialize`, which replaces this
conversion):

    python3 scripts/paper-tsv.py [PAPER_DATA_DIR] [OUT_DIR]     # defaults: ../shared/paper-data /tmp/paper

writes OUT_DIR/{rand1k,rmat,rand5k}/a.facts (edges, `src dst a` lines) and
OUT_DIR/lubm/T.facts (LUBM1 triples as `T(s, p, o)`, with rdf:type, rdfs:subClassOf,
rdfs:subPropertyOf, rdfs:domain and rdfs:range abbreviated as the study's RhoDF program
expects). Then, for example:

    dynalog run ../shared/paper-data/tc.dl -F /tmp/paper/rmat -D /tmp/out --stats
"""
import gzip
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../shared/paper-data")
out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/paper"

for name, file in [("rand1k", "rand1k_edges.txt"), ("rmat", "rmat1k_edges.txt"), ("rand5k", "rand5k_edges.txt")]:
    os.makedirs(os.path.join(out, name), exist_ok=True)
    with open(os.path.join(src, file)) as f, open(os.path.join(out, name, "a.facts"), "w") as w:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                w.write(f"{parts[0]}\t{parts[1]}\n")

ABBR = {
    "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>": "rdf:type",
    "<http://www.w3.org/2000/01/rdf-schema#subClassOf>": "rdfs:subClassOf",
    "<http://www.w3.org/2000/01/rdf-schema#subPropertyOf>": "rdfs:subPropertyOf",
    "<http://www.w3.org/2000/01/rdf-schema#domain>": "rdfs:domain",
    "<http://www.w3.org/2000/01/rdf-schema#range>": "rdfs:range",
}
TERM = re.compile(r'(<[^>]*>|_:\S+|"(?:[^"\\]|\\.)*"(?:@[\w-]+|\^\^<[^>]*>)?)')
os.makedirs(os.path.join(out, "lubm"), exist_ok=True)
with gzip.open(os.path.join(src, "lubm1_with_tbox.nt.gz"), "rt") as f, open(os.path.join(out, "lubm", "T.facts"), "w") as w:
    for line in f:
        terms = TERM.findall(line)
        if len(terms) >= 3:
            w.write("\t".join(ABBR.get(t, t) for t in terms[:3]) + "\n")

# OWL2RL, the study's vocabulary mapping: `x rdf:type C` becomes C(x) (C's local name;
# besides the univ-bench classes this keeps 84 TBox typings such as Class(ub:Person)),
# a triple whose predicate is in the univ-bench namespace becomes p(s, o) with the local
# name as the relation, every other triple is dropped, and so are the two lines with the
# relative IRI `<>`. This gives the README's 100,627 facts. One file per relation under
# OUT_DIR/owl2rl/.
UB = "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#"
facts = {}
with gzip.open(os.path.join(src, "lubm1_with_tbox.nt.gz"), "rt") as f:
    for line in f:
        terms = TERM.findall(line)
        if len(terms) < 3:
            continue
        s, p, o = terms[:3]
        if "<>" in (s, p, o):
            continue
        if p == "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>" and o.startswith("<"):
            facts.setdefault(re.split("[#/]", o[1:-1])[-1], set()).add((s,))
        elif p.startswith("<" + UB):
            facts.setdefault(p[len(UB) + 1:-1], set()).add((s, o))
os.makedirs(os.path.join(out, "owl2rl"), exist_ok=True)
for rel, rows in facts.items():
    with open(os.path.join(out, "owl2rl", rel + ".facts"), "w") as w:
        for row in sorted(rows):
            w.write("\t".join(row) + "\n")
