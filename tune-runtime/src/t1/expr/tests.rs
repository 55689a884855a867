#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

struct Names(Vec<&'static str>);
impl Resolve for Names {
    fn resolve(&self, name: &str) -> Option<Binding> {
        if name == "ProblemSize" {
            return Some(Binding::Value(PyValue::List(
                vec![PyValue::Int(4096), PyValue::Int(2048)].into(),
            )));
        }
        self.0.iter().position(|n| *n == name).map(Binding::Slot)
    }
    fn known(&self) -> String {
        self.0.join(", ")
    }
}

fn ev(src: &str) -> PyValue {
    parse(src, &Names(vec![])).unwrap().eval(&NoVars).unwrap()
}
fn ev_err(src: &str) -> ExprError {
    match parse(src, &Names(vec!["x"])) {
        Err(e) => e,
        Ok(e) => e.eval(&Vars(&[PyValue::Int(3)])).unwrap_err(),
    }
}
fn ints(v: &[i64]) -> PyValue {
    PyValue::List(v.iter().map(|&i| PyValue::Int(i)).collect())
}

#[test]
fn arithmetic_follows_python() {
    assert_eq!(ev("7 // 2"), PyValue::Int(3));
    assert_eq!(ev("-7 // 2"), PyValue::Int(-4));
    assert_eq!(ev("7 // -2"), PyValue::Int(-4));
    assert_eq!(ev("-7 % 3"), PyValue::Int(2));
    assert_eq!(ev("7 % -3"), PyValue::Int(-2));
    assert_eq!(ev("7 / 2"), PyValue::Float(3.5));
    assert_eq!(ev("4 / 2"), PyValue::Float(2.0));
    assert_eq!(ev("-7.5 // 2"), PyValue::Float(-4.0));
    assert_eq!(ev("-7.5 % 2"), PyValue::Float(0.5));
    assert_eq!(ev("2 ** 10"), PyValue::Int(1024));
    assert_eq!(ev("2 ** -1"), PyValue::Float(0.5));
    assert_eq!(ev("-2 ** 2"), PyValue::Int(-4)); // ** binds tighter than unary minus
    assert_eq!(ev("2 ** 3 ** 2"), PyValue::Int(512)); // right-associative
    assert_eq!(ev("2 ** -1 ** 2"), PyValue::Float(0.5));
    assert_eq!(ev("1 + 2 * 3 - 4"), PyValue::Int(3));
    assert_eq!(ev("True + True"), PyValue::Int(2));
    assert_eq!(ev("1 << 4 | 1"), PyValue::Int(17));
    assert_eq!(ev("6 & 3 ^ 1"), PyValue::Int(3));
    assert_eq!(ev("~5"), PyValue::Int(-6));
    assert_eq!(ev("0x10 + 0b11 + 1_000"), PyValue::Int(1019));
    assert_eq!(ev("1e3"), PyValue::Float(1000.0));
    assert_eq!(ev("2.5e-1 * 4"), PyValue::Float(1.0));
}

#[test]
fn logic_and_comparisons_follow_python() {
    assert_eq!(ev("32 <= 8 * 16 <= 1024"), PyValue::Bool(true));
    assert_eq!(ev("32 <= 8 * 2 <= 1024"), PyValue::Bool(false));
    assert_eq!(ev("1 < 2 > 1"), PyValue::Bool(true));
    assert_eq!(ev("0 or 5"), PyValue::Int(5));
    assert_eq!(ev("3 and 0"), PyValue::Int(0));
    assert_eq!(ev("not 0"), PyValue::Bool(true));
    assert_eq!(ev("not 1 == 2"), PyValue::Bool(true)); // not binds looser than ==
    assert_eq!(ev("1 == 1.0"), PyValue::Bool(true));
    assert_eq!(ev("True == 1"), PyValue::Bool(true));
    assert_eq!(ev("'a' == 1"), PyValue::Bool(false));
    assert_eq!(ev("2 in [1, 2, 3]"), PyValue::Bool(true));
    assert_eq!(ev("2 not in (1, 2, 3)"), PyValue::Bool(false));
    assert_eq!(ev("'ab' in 'cabd'"), PyValue::Bool(true));
    assert_eq!(ev("1 if 2 > 1 else 0"), PyValue::Int(1));
    assert_eq!(ev("1 if 0 else 2 if 0 else 3"), PyValue::Int(3));
    assert_eq!(ev("[1, 2] < [1, 3]"), PyValue::Bool(true));
    assert_eq!(ev("'abc' < 'abd'"), PyValue::Bool(true));
    assert_eq!(ev("2 >= 2"), PyValue::Bool(true));
    assert_eq!(ev("2 <= 1"), PyValue::Bool(false));
    assert_eq!(
        ev("float('nan') < 1 or float('nan') >= 1"),
        PyValue::Bool(false)
    );
}

#[test]
fn value_lists_and_builtins() {
    assert_eq!(ev("[2**i for i in range(4)]"), ints(&[1, 2, 4, 8]));
    assert_eq!(ev("list(range(1, 10, 3))"), ints(&[1, 4, 7]));
    assert_eq!(ev("list(range(5, 0, -2))"), ints(&[5, 3, 1]));
    assert_eq!(
        ev("[i for i in range(10) if i % 3 == 0]"),
        ints(&[0, 3, 6, 9])
    );
    assert_eq!(
        ev("[i * j for i in [1, 2] for j in [10, 20]]"),
        ints(&[10, 20, 20, 40])
    );
    assert_eq!(ev("[16*i for i in range(1,3)] + [64]"), ints(&[16, 32, 64]));
    assert_eq!(ev("[1] * 3"), ints(&[1, 1, 1]));
    assert_eq!(ev("max([1, 5, 2])"), PyValue::Int(5));
    assert_eq!(ev("min(4, 2, 9)"), PyValue::Int(2));
    assert_eq!(
        ev("abs(-3) + len([1, 2]) + sum([1, 2, 3])"),
        PyValue::Int(11)
    );
    assert_eq!(ev("int(3.9) + int(-3.9)"), PyValue::Int(0));
    assert_eq!(ev("round(2.5) + round(3.5)"), PyValue::Int(6)); // half to even
    assert_eq!(ev("pow(2, 5)"), PyValue::Int(32));
    assert_eq!(ev("float(3)"), PyValue::Float(3.0));
    assert_eq!(ev("(1, 2)[1]"), PyValue::Int(2));
    assert_eq!(ev("[1, 2, 3][-1]"), PyValue::Int(3));
    assert_eq!(
        ev("['a', 'b']"),
        PyValue::List(vec![PyValue::Str("a".into()), PyValue::Str("b".into())].into())
    );
    assert_eq!(ev("()"), PyValue::List(Vec::new().into()));
    assert_eq!(ev("(3)"), PyValue::Int(3));
    assert_eq!(ev("(3,)"), ints(&[3]));
}

#[test]
fn variables_and_constants_resolve() {
    let names = Names(vec!["bx", "by"]);
    let (e, slots) = slots_of("bx * by <= 1024 and ProblemSize[0] % bx == 0", &names).unwrap();
    assert_eq!(slots, vec![0, 1]);
    let env = [PyValue::Int(32), PyValue::Int(16)];
    assert_eq!(e.eval(&Vars(&env)).unwrap(), PyValue::Bool(true));
    let env = [PyValue::Int(64), PyValue::Int(32)];
    assert_eq!(e.eval(&Vars(&env)).unwrap(), PyValue::Bool(false));
    // A comprehension variable shadows a parameter of the same name.
    let (e, slots) = slots_of("[bx for bx in range(3)]", &names).unwrap();
    assert!(slots.is_empty());
    assert_eq!(e.eval(&NoVars).unwrap(), ints(&[0, 1, 2]));
}

#[test]
fn errors_name_the_construct_and_column() {
    let e = ev_err("x + lambda y: y");
    assert_eq!(e.column, 4);
    assert!(e.message.contains("lambda"), "{e}");
    let e = ev_err("math.floor(x)");
    assert!(e.message.contains("`math.floor`"), "{e}");
    let e = ev_err("x.real");
    assert_eq!(e.column, 0);
    assert!(e.message.contains("attribute"), "{e}");
    let e = ev_err("[1, 2][0:1]");
    assert!(e.message.contains("slices"), "{e}");
    let e = ev_err("y + 1");
    assert_eq!(e.column, 0);
    assert!(
        e.message.contains("unknown name `y`") && e.message.contains("x"),
        "{e}"
    );
    let e = ev_err("x / (x - 3)");
    assert_eq!(e.column, 2);
    assert!(e.message.contains("division by zero"), "{e}");
    let e = ev_err("x // 0");
    assert!(e.message.contains("division by zero"), "{e}");
    let e = ev_err("x is None");
    assert!(e.message.contains("`is`"), "{e}");
    let e = ev_err("{1: 2}");
    assert!(e.message.contains("dictionaries"), "{e}");
    let e = ev_err("max(x, key=abs)");
    assert!(e.message.contains("keyword"), "{e}");
    let e = ev_err("sum(i for i in range(3))");
    assert!(e.message.contains("generator"), "{e}");
    let e = ev_err("x + ");
    assert!(e.message.contains("ends too early"), "{e}");
    let e = ev_err("(x + 1");
    assert!(e.message.contains("expected `)`"), "{e}");
    let e = ev_err("x $ 1");
    assert_eq!(e.column, 2);
    let e = ev_err("'a' < 1");
    assert!(e.message.contains("not supported between"), "{e}");
    let e = ev_err("2 ** 64");
    assert!(e.message.contains("overflow"), "{e}");
    assert_eq!(e.to_string().split(':').next(), Some("column 3"));
}
