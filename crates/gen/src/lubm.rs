//! LUBM data: a reimplementation of the Lehigh University Benchmark's data generator
//! (UBA 1.7, Guo, Pan and Heflin), written as N-Triples.
//!
//! `lubm(N, seed)` writes the univ-bench ontology (the TBox, 315 triples), the ontology
//! header of the data, and universities `0..N`. For the same `N` and seed the triples are
//! those of the original Java program's RDF/XML output after parsing: LUBM(1, 0) equals the
//! study's `lubm1_with_tbox.nt` line for line (see the integration test).
//!
//! ## The random stream
//! One `java.util.Random` ([`JavaRandom`]) per university, seeded with
//! `seed * (Integer.MAX_VALUE + 1) + u` evaluated as Java does: `Integer.MAX_VALUE + 1`
//! overflows to `-2^31`, so the seed is `u - seed * 2^31` (plain `u` for seed 0).
//! `range(a, b)` is `a + nextInt(b - a + 1)`. Every draw of the original is made, in the
//! original order, including the ones whose value it ignores; that is what keeps the
//! stream, and so the data, identical.
//!
//! ## Per university and department
//! The number of departments is `range(15, 25)`. Each department then draws, in this order:
//! full professors `range(7, 10)`, associate `range(10, 14)`, assistant `range(8, 11)`,
//! lecturers `range(5, 7)` (F faculty in all), undergraduates `range(8F, 14F)`, graduate
//! students `range(3F, 4F)` (G), teaching assistants `range(G/5, G/4)`, research assistants
//! `range(G/4, G/3)`, research groups `range(10, 20)`, and the chair `nextInt(full)`.
//! It then writes, in order:
//! 1. for department 0 only, the university (type, name);
//! 2. the department (type, name, subOrganizationOf the university);
//! 3. full, associate and assistant professors, then lecturers: name; 1–2 courses and 1–2
//!    graduate courses (`teacherOf`; handed out in sequence 0, 1, 2, ..., each after one
//!    discarded draw `range(0, remaining - 1)`); undergraduate, masters and doctoral degree
//!    from `University<nextInt(1000)>`; worksFor; emailAddress; telephone; professors a
//!    `researchInterest` `Research<nextInt(30)>`; the chair `headOf`. Each then gets its
//!    publications: full 15–20, associate 10–18, assistant 5–10, lecturer 0–5;
//! 4. undergraduates: name, memberOf, emailAddress, telephone, 2–4 distinct courses taught
//!    in the department (`takesCourse`), and with probability 1/5 (`nextInt(5) == 0`) an
//!    advisor;
//! 5. graduate students: the same with 1–3 graduate courses, undergraduateDegreeFrom,
//!    an advisor (`nextInt(1) == 0`: always, but it costs a draw) and 0–5 distinct
//!    publications generated so far, to which they are added as authors;
//! 6. research groups (subOrganizationOf the department);
//! 7. publications (name, every author), courses, graduate courses;
//! 8. TAs and RAs: `TA + RA` distinct graduate students, then `TA` distinct courses; the
//!    first TA students get the type TeachingAssistant and teachingAssistantOf their course,
//!    the rest the type ResearchAssistant.
//!
//! An advisor is a professor: the kind `range(full, assistant)`, then `nextInt(count)`.
//! "Distinct" picks (`_getRandomList` in UBA) draw a position `range(0, left - 1)` in the
//! list of values not taken yet and remove it.
//!
//! ## The triples
//! IRIs are `http://www.University<u>.edu`, `http://www.Department<d>.University<u>.edu`,
//! `<department>/<Class><i>` for people, courses and groups, and `<author>/Publication<i>`
//! for publications. Where UBA's RDF/XML nests a typed node as a property value (the
//! degrees and the department's university), the parsed data has the property triple
//! followed by `<value> rdf:type ub:University`; those type triples repeat, so the data
//! holds duplicate lines (LUBM(1, 0): 103,074 lines, 100,543 distinct), as the study's file.
//!
//! ## The `<>` header
//! UBA starts every department file with an ontology header,
//! `<owl:Ontology rdf:about=""><owl:imports rdf:resource="<ontology>"/></owl:Ontology>`.
//! `rdf:about=""` is the document's own IRI; parsed without a base IRI it stays the empty
//! relative IRI, giving the two lines `<> rdf:type owl:Ontology` and
//! `<> owl:imports <univ-bench.owl>`. The study's file holds them once (one document), and
//! so does our output, right after the TBox. `<>` is not an absolute IRI, so strict
//! N-Triples parsers reject those two lines; they say nothing about the data.

use crate::GenError;
use crate::java_random::JavaRandom;
use std::io::{BufWriter, Write};

/// The univ-bench ontology namespace (without the `#`), as in the study's file.
pub const UNIV_BENCH: &str = "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl";
/// The univ-bench ontology (the TBox) as 315 N-Triples lines.
pub const TBOX: &str = include_str!("univ-bench.nt");

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const OWL_ONTOLOGY: &str = "http://www.w3.org/2002/07/owl#Ontology";
const OWL_IMPORTS: &str = "http://www.w3.org/2002/07/owl#imports";

// UBA 1.7's generation parameters.
const UNIV_POOL: i32 = 1000;
const RESEARCH_POOL: i32 = 30;
const COURSE_POOL: i32 = 100;
const GRAD_COURSE_POOL: i32 = 100;

/// The faculty kinds, in the order UBA generates them, with their publication ranges.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Faculty {
    Full,
    Associate,
    Assistant,
    Lecturer,
}

impl Faculty {
    fn class(self) -> &'static str {
        match self {
            Faculty::Full => "FullProfessor",
            Faculty::Associate => "AssociateProfessor",
            Faculty::Assistant => "AssistantProfessor",
            Faculty::Lecturer => "Lecturer",
        }
    }

    fn publications(self) -> (i32, i32) {
        match self {
            Faculty::Full => (15, 20),
            Faculty::Associate => (10, 18),
            Faculty::Assistant => (5, 10),
            Faculty::Lecturer => (0, 5),
        }
    }
}

/// The seed of university `u`: Java's `seed * (Integer.MAX_VALUE + 1) + u`, where the
/// `int` sum overflows to `Integer.MIN_VALUE`.
pub fn university_seed(seed: u32, u: u32) -> i64 {
    i64::from(seed)
        .wrapping_mul(i64::from(i32::MIN))
        .wrapping_add(i64::from(u))
}

/// Check the arguments of [`lubm`] without writing anything.
pub fn check_lubm(universities: u32) -> Result<(), GenError> {
    if universities == 0 {
        return Err(GenError::invalid(
            "the number of universities must be at least 1",
        ));
    }
    if universities > i32::MAX as u32 {
        return Err(GenError::invalid(format!(
            "the number of universities must be at most {} (UBA's int indices), got {universities}",
            i32::MAX
        )));
    }
    Ok(())
}

/// Write LUBM(`universities`, `seed`) as N-Triples: the TBox, the `<>` ontology header,
/// then the data of universities `0..universities`.
pub fn lubm<W: Write + ?Sized>(universities: u32, seed: u32, out: &mut W) -> Result<(), GenError> {
    check_lubm(universities)?;
    let mut w = Triples::new(BufWriter::with_capacity(1 << 16, out));
    w.out.write_all(TBOX.as_bytes())?;
    writeln!(w.out, "<> <{RDF_TYPE}> <{OWL_ONTOLOGY}> .")?;
    writeln!(w.out, "<> <{OWL_IMPORTS}> <{UNIV_BENCH}> .")?;
    for u in 0..universities {
        university(&mut w, u, seed)?;
    }
    w.out.flush()?;
    Ok(())
}

/// The data of one university (no TBox, no header).
fn university<W: Write>(w: &mut Triples<W>, u: u32, seed: u32) -> std::io::Result<()> {
    let mut rng = Draws(JavaRandom::new(university_seed(seed, u)));
    let departments = rng.range(15, 25);
    for d in 0..departments {
        Department::new(&mut rng, u, d as u32).write(w)?;
    }
    Ok(())
}

/// UBA's draws on top of `java.util.Random`.
struct Draws(JavaRandom);

impl Draws {
    /// `nextInt(bound)`; UBA's fixed parameters keep every bound positive.
    fn int(&mut self, bound: i32) -> i32 {
        self.0
            .next_int(bound)
            .expect("UBA's parameters keep every bound positive")
    }

    /// `range(a, b)`: uniform in `a..=b`.
    fn range(&mut self, a: i32, b: i32) -> i32 {
        a + self.int(b - a + 1)
    }

    /// `_getRandomList(num, 0, len - 1)`: `num` distinct values of `0..len`.
    fn distinct(&mut self, num: i32, len: i32) -> Vec<i32> {
        let mut left: Vec<i32> = (0..len).collect();
        (0..num)
            .map(|_| {
                let pos = self.range(0, left.len() as i32 - 1);
                left.remove(pos as usize)
            })
            .collect()
    }
}

/// A publication, written after all people of its department.
struct Publication {
    iri: String,
    index: i32,
    authors: Vec<String>,
}

/// One department: its sizes (drawn up front) and what is handed out while it is written.
struct Department<'r> {
    rng: &'r mut Draws,
    u: u32,
    d: u32,
    iri: String,
    counts: [i32; 4], // full, associate, assistant, lecturer
    undergraduates: i32,
    graduates: i32,
    tas: i32,
    ras: i32,
    groups: i32,
    chair: i32,
    courses: i32,      // courses handed out so far (Course0..)
    grad_courses: i32, // graduate courses handed out so far (GraduateCourse0..)
    publications: Vec<Publication>,
}

impl<'r> Department<'r> {
    fn new(rng: &'r mut Draws, u: u32, d: u32) -> Department<'r> {
        let full = rng.range(7, 10);
        let associate = rng.range(10, 14);
        let assistant = rng.range(8, 11);
        let lecturers = rng.range(5, 7);
        let faculty = full + associate + assistant + lecturers;
        let undergraduates = rng.range(8 * faculty, 14 * faculty);
        let graduates = rng.range(3 * faculty, 4 * faculty);
        let tas = rng.range(graduates / 5, graduates / 4);
        let ras = rng.range(graduates / 4, graduates / 3);
        let groups = rng.range(10, 20);
        let chair = rng.int(full);
        Department {
            rng,
            u,
            d,
            iri: format!("http://www.Department{d}.University{u}.edu"),
            counts: [full, associate, assistant, lecturers],
            undergraduates,
            graduates,
            tas,
            ras,
            groups,
            chair,
            courses: 0,
            grad_courses: 0,
            publications: Vec::new(),
        }
    }

    fn member(&self, class: &str, i: i32) -> String {
        format!("{}/{class}{i}", self.iri)
    }

    fn email(&self, class: &str, i: i32) -> String {
        format!("{class}{i}@Department{}.University{}.edu", self.d, self.u)
    }

    fn write<W: Write>(mut self, w: &mut Triples<W>) -> std::io::Result<()> {
        let univ = university_iri(self.u);
        if self.d == 0 {
            w.subject(&univ, "University")?;
            w.literal("name", &format!("University{}", self.u))?;
        }
        w.subject(&self.iri, "Department")?;
        w.literal("name", &format!("Department{}", self.d))?;
        w.typed("subOrganizationOf", &univ, "University")?;

        for kind in [
            Faculty::Full,
            Faculty::Associate,
            Faculty::Assistant,
            Faculty::Lecturer,
        ] {
            for i in 0..self.counts[kind as usize] {
                self.faculty(w, kind, i)?;
            }
        }
        for i in 0..self.undergraduates {
            self.undergraduate(w, i)?;
        }
        for i in 0..self.graduates {
            self.graduate(w, i)?;
        }
        for i in 0..self.groups {
            w.subject(&self.member("ResearchGroup", i), "ResearchGroup")?;
            w.resource("subOrganizationOf", &self.iri)?;
        }
        for p in &self.publications {
            w.subject(&p.iri, "Publication")?;
            w.literal("name", &format!("Publication{}", p.index))?;
            for a in &p.authors {
                w.resource("publicationAuthor", a)?;
            }
        }
        for i in 0..self.courses {
            w.subject(&self.member("Course", i), "Course")?;
            w.literal("name", &format!("Course{i}"))?;
        }
        for i in 0..self.grad_courses {
            w.subject(&self.member("GraduateCourse", i), "GraduateCourse")?;
            w.literal("name", &format!("GraduateCourse{i}"))?;
        }
        self.assistants(w)
    }

    fn faculty<W: Write>(
        &mut self,
        w: &mut Triples<W>,
        kind: Faculty,
        i: i32,
    ) -> std::io::Result<()> {
        let class = kind.class();
        let iri = self.member(class, i);
        w.subject(&iri, class)?;
        w.literal("name", &format!("{class}{i}"))?;
        for _ in 0..self.rng.range(1, 2) {
            // UBA draws a position in the pool, then takes the courses in sequence anyway.
            self.rng.range(0, COURSE_POOL - self.courses - 1);
            w.resource("teacherOf", &self.member("Course", self.courses))?;
            self.courses += 1;
        }
        for _ in 0..self.rng.range(1, 2) {
            self.rng.range(0, GRAD_COURSE_POOL - self.grad_courses - 1);
            w.resource(
                "teacherOf",
                &self.member("GraduateCourse", self.grad_courses),
            )?;
            self.grad_courses += 1;
        }
        for degree in [
            "undergraduateDegreeFrom",
            "mastersDegreeFrom",
            "doctoralDegreeFrom",
        ] {
            let from = university_iri(self.rng.int(UNIV_POOL) as u32);
            w.typed(degree, &from, "University")?;
        }
        w.resource("worksFor", &self.iri)?;
        w.literal("emailAddress", &self.email(class, i))?;
        w.literal("telephone", "xxx-xxx-xxxx")?;
        if kind != Faculty::Lecturer {
            let research = self.rng.int(RESEARCH_POOL);
            w.literal("researchInterest", &format!("Research{research}"))?;
        }
        if kind == Faculty::Full && i == self.chair {
            w.resource("headOf", &self.iri)?;
        }
        let (min, max) = kind.publications();
        for p in 0..self.rng.range(min, max) {
            self.publications.push(Publication {
                iri: format!("{iri}/Publication{p}"),
                index: p,
                authors: vec![iri.clone()],
            });
        }
        Ok(())
    }

    /// name, memberOf, emailAddress, telephone: what every student has.
    fn student<W: Write>(&self, w: &mut Triples<W>, class: &str, i: i32) -> std::io::Result<()> {
        w.subject(&self.member(class, i), class)?;
        w.literal("name", &format!("{class}{i}"))?;
        w.resource("memberOf", &self.iri)?;
        w.literal("emailAddress", &self.email(class, i))?;
        w.literal("telephone", "xxx-xxx-xxxx")
    }

    fn undergraduate<W: Write>(&mut self, w: &mut Triples<W>, i: i32) -> std::io::Result<()> {
        self.student(w, "UndergraduateStudent", i)?;
        let n = self.rng.range(2, 4);
        for c in self.rng.distinct(n, self.courses) {
            w.resource("takesCourse", &self.member("Course", c))?;
        }
        if self.rng.int(5) == 0 {
            let advisor = self.advisor();
            w.resource("advisor", &advisor)?;
        }
        Ok(())
    }

    fn graduate<W: Write>(&mut self, w: &mut Triples<W>, i: i32) -> std::io::Result<()> {
        self.student(w, "GraduateStudent", i)?;
        let n = self.rng.range(1, 3);
        for c in self.rng.distinct(n, self.grad_courses) {
            w.resource("takesCourse", &self.member("GraduateCourse", c))?;
        }
        let from = university_iri(self.rng.int(UNIV_POOL) as u32);
        w.typed("undergraduateDegreeFrom", &from, "University")?;
        if self.rng.int(1) == 0 {
            let advisor = self.advisor();
            w.resource("advisor", &advisor)?;
        }
        let n = self.rng.range(0, 5);
        let me = self.member("GraduateStudent", i);
        for p in self.rng.distinct(n, self.publications.len() as i32) {
            self.publications[p as usize].authors.push(me.clone());
        }
        Ok(())
    }

    /// A random professor (full, associate or assistant) of this department.
    fn advisor(&mut self) -> String {
        let kind =
            [Faculty::Full, Faculty::Associate, Faculty::Assistant][self.rng.range(0, 2) as usize];
        let i = self.rng.int(self.counts[kind as usize]);
        self.member(kind.class(), i)
    }

    fn assistants<W: Write>(&mut self, w: &mut Triples<W>) -> std::io::Result<()> {
        let students = self.rng.distinct(self.tas + self.ras, self.graduates);
        let courses = self.rng.distinct(self.tas, self.courses);
        for (k, s) in students.iter().enumerate() {
            let iri = self.member("GraduateStudent", *s);
            if let Some(c) = courses.get(k) {
                w.subject(&iri, "TeachingAssistant")?;
                w.resource("teachingAssistantOf", &self.member("Course", *c))?;
            } else {
                w.subject(&iri, "ResearchAssistant")?;
            }
        }
        Ok(())
    }
}

fn university_iri(u: u32) -> String {
    format!("http://www.University{u}.edu")
}

/// An N-Triples writer with a current subject, like UBA's section writer.
struct Triples<W: Write> {
    out: W,
    subject: String,
}

impl<W: Write> Triples<W> {
    fn new(out: W) -> Triples<W> {
        Triples {
            out,
            subject: String::new(),
        }
    }

    /// `<iri> rdf:type ub:<class>`, and `iri` becomes the subject of what follows.
    fn subject(&mut self, iri: &str, class: &str) -> std::io::Result<()> {
        self.subject.clear();
        self.subject.push_str(iri);
        writeln!(self.out, "<{iri}> <{RDF_TYPE}> <{UNIV_BENCH}#{class}> .")
    }

    fn literal(&mut self, property: &str, value: &str) -> std::io::Result<()> {
        writeln!(
            self.out,
            "<{}> <{UNIV_BENCH}#{property}> \"{value}\" .",
            self.subject
        )
    }

    fn resource(&mut self, property: &str, iri: &str) -> std::io::Result<()> {
        writeln!(
            self.out,
            "<{}> <{UNIV_BENCH}#{property}> <{iri}> .",
            self.subject
        )
    }

    /// A property whose value UBA writes as a nested typed node: the property triple,
    /// then the value's type.
    fn typed(&mut self, property: &str, iri: &str, class: &str) -> std::io::Result<()> {
        self.resource(property, iri)?;
        writeln!(self.out, "<{iri}> <{RDF_TYPE}> <{UNIV_BENCH}#{class}> .")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn generate(universities: u32, seed: u32) -> String {
        let mut out = Vec::new();
        lubm(universities, seed, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The data lines: after the TBox and the two `<>` header lines.
    fn data(text: &str) -> Vec<&str> {
        text.lines().skip(TBOX.lines().count() + 2).collect()
    }

    fn ub(local: &str) -> String {
        format!("<{UNIV_BENCH}#{local}>")
    }

    /// Distinct subjects typed `class`.
    fn instances(lines: &[&str], class: &str) -> usize {
        let suffix = format!("<{RDF_TYPE}> {} .", ub(class));
        lines
            .iter()
            .filter(|l| l.ends_with(&suffix))
            .collect::<HashSet<_>>()
            .len()
    }

    /// Lines whose predicate is `ub:<property>`.
    fn uses(lines: &[&str], property: &str) -> usize {
        let p = format!("> {} ", ub(property));
        lines.iter().filter(|l| l.contains(&p)).count()
    }

    #[test]
    fn university_seed_overflows_like_java() {
        assert_eq!(university_seed(0, 0), 0);
        assert_eq!(university_seed(0, 7), 7);
        // Printed by Java: 3L * (Integer.MAX_VALUE + 1) + 2.
        assert_eq!(university_seed(3, 2), -6_442_450_942);
    }

    #[test]
    fn tbox_is_the_univ_bench_ontology() {
        assert_eq!(TBOX.lines().count(), 315);
        assert!(TBOX.lines().all(|l| l.ends_with(" .")));
        assert!(TBOX.contains(&format!("<{UNIV_BENCH}> <{RDF_TYPE}> <{OWL_ONTOLOGY}> .")));
    }

    #[test]
    fn lubm_1_0_has_the_counts_of_the_study() {
        let text = generate(1, 0);
        let lines: Vec<&str> = text.lines().collect();
        assert!(text.starts_with(TBOX));
        assert_eq!(lines[315], format!("<> <{RDF_TYPE}> <{OWL_ONTOLOGY}> ."));
        assert_eq!(lines[316], format!("<> <{OWL_IMPORTS}> <{UNIV_BENCH}> ."));
        let data = data(&text);
        assert_eq!(data.len(), 103_074);
        assert_eq!(data.iter().collect::<HashSet<_>>().len(), 100_543);
        assert!(data.iter().all(|l| !l.starts_with("<> ")));

        let expected_instances = [
            ("Department", 15),
            ("Publication", 5_999),
            ("UndergraduateStudent", 5_916),
            ("GraduateStudent", 1_874),
            ("University", 979),
            ("Course", 828),
            ("GraduateCourse", 799),
            ("ResearchAssistant", 547),
            ("TeachingAssistant", 407),
            ("ResearchGroup", 224),
            ("FullProfessor", 125),
            ("AssociateProfessor", 176),
            ("AssistantProfessor", 146),
            ("Lecturer", 93),
        ];
        for (class, n) in expected_instances {
            assert_eq!(instances(&data, class), n, "instances of {class}");
        }
        let expected_uses = [
            ("takesCourse", 21_489),
            ("name", 15_972),
            ("publicationAuthor", 10_634),
            ("telephone", 8_330),
            ("emailAddress", 8_330),
            ("memberOf", 7_790),
            ("advisor", 3_101),
            ("headOf", 15),
        ];
        for (property, n) in expected_uses {
            assert_eq!(uses(&data, property), n, "triples with {property}");
        }
    }

    #[test]
    fn each_department_has_uba_s_shape() {
        let text = generate(1, 0);
        let data = data(&text);
        let mut per_dept: HashMap<&str, HashMap<&str, usize>> = HashMap::new();
        let type_mark = format!("> <{RDF_TYPE}> <{UNIV_BENCH}#");
        for l in &data {
            if let Some((subject, rest)) = l.split_once(&type_mark)
                && let Some(dept) = subject
                    .strip_prefix("<http://www.")
                    .and_then(|s| s.split('/').next())
                && dept.starts_with("Department")
            {
                let class = rest.trim_end_matches("> .");
                *per_dept.entry(dept).or_default().entry(class).or_default() += 1;
            }
        }
        assert_eq!(per_dept.len(), 15);
        for (dept, c) in &per_dept {
            let n = |k: &str| c.get(k).copied().unwrap_or(0);
            let f = n("FullProfessor")
                + n("AssociateProfessor")
                + n("AssistantProfessor")
                + n("Lecturer");
            assert!((7..=10).contains(&n("FullProfessor")), "{dept}");
            assert!((10..=14).contains(&n("AssociateProfessor")), "{dept}");
            assert!((8..=11).contains(&n("AssistantProfessor")), "{dept}");
            assert!((5..=7).contains(&n("Lecturer")), "{dept}");
            assert!(
                (8 * f..=14 * f).contains(&n("UndergraduateStudent")),
                "{dept}"
            );
            let g = n("GraduateStudent");
            assert!((3 * f..=4 * f).contains(&g), "{dept}");
            assert!((g / 5..=g / 4).contains(&n("TeachingAssistant")), "{dept}");
            assert!((g / 4..=g / 3).contains(&n("ResearchAssistant")), "{dept}");
            assert!((10..=20).contains(&n("ResearchGroup")), "{dept}");
        }
    }

    #[test]
    fn universities_are_generated_independently() {
        // University 0 of LUBM(2, 0) is LUBM(1, 0): one stream per university.
        let one = generate(1, 0);
        let two = generate(2, 0);
        let d1 = data(&one);
        let d2 = data(&two);
        assert!(d2.len() > d1.len() + 80_000);
        assert_eq!(&d2[..d1.len()], &d1[..]);
        assert!(d2[d1.len()].starts_with("<http://www.University1.edu> "));
        assert_eq!(two.lines().filter(|l| l.starts_with("<> ")).count(), 2);
    }

    #[test]
    fn the_seed_changes_the_data_deterministically() {
        let a = generate(1, 1);
        assert_eq!(a, generate(1, 1));
        assert_ne!(data(&a), data(&generate(1, 0)));
    }

    #[test]
    fn zero_universities_is_an_error() {
        let mut out = Vec::new();
        assert!(matches!(lubm(0, 0, &mut out), Err(GenError::Invalid(_))));
        assert!(out.is_empty());
    }
}
