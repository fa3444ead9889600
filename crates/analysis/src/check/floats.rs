//! Float equality is IEEE's: `0.0 = -0.0` holds and NaN equals nothing, not even
//! itself, wherever the program compares floats.
//!
//! The engines match an atom's constants and bound variables by a value's bits, which
//! agrees with IEEE equality for every float but the two zeros and NaN. So a constant
//! of those three in a positive body atom becomes a fresh variable and an equality
//! (`r(-0.0)` becomes `r(_argN), _argN = -0.0`), and the ordering pass (`order`) keeps
//! a float equality a comparison, evaluated after the atom, unless the variable it
//! would bind is bound by no positive atom (then it defines the variable) or the other
//! side is a constant whose bits decide equality.
//!
//! As in Soufflé, a variable shared by two atoms (`a(x), b(x)`) and a negated atom
//! (`!r(-0.0)`, `!r(x)`) match by bits: they are unification and absence, not
//! comparisons. Where Soufflé differs: it treats `x = y` between two variables as one
//! variable (bits: `-0.0 = 0.0` fails and `NaN = NaN` holds), where dynalog compares.

use super::order::Constraint;
use super::types::Lowered;
use crate::ir::{self, Term};
use crate::value::{Type, Value};
use dynalog_syntax::CmpOp;

/// Whether bit equality with the float of bits `bits` is IEEE equality: it is not a
/// zero and not NaN.
pub(super) fn bits_decide_equality(bits: Value) -> bool {
    let f = f32::from_bits(bits);
    f != 0.0 && !f.is_nan()
}

/// Replace the float constants of positive atoms whose bits do not decide equality
/// (zeros and NaN) with fresh variables, named and typed in `var_names`/`var_types`,
/// and equalities with the constant.
pub(super) fn compare_float_constants(
    lowered: &mut Lowered,
    relations: &[ir::Relation],
    var_names: &mut Vec<String>,
    var_types: &mut Vec<Type>,
) {
    for (negated, atom, span) in &mut lowered.atoms {
        if *negated {
            continue;
        }
        let types = &relations[atom.relation as usize].types;
        for (arg, ty) in atom.args.iter_mut().zip(types) {
            let Term::Const(bits) = *arg else { continue };
            if *ty != Type::Float || bits_decide_equality(bits) {
                continue;
            }
            let var = var_names.len() as ir::VarId;
            var_names.push(format!("_arg{var}"));
            var_types.push(Type::Float);
            *arg = Term::Var(var);
            lowered.constraints.push(Constraint {
                op: CmpOp::Eq,
                ty: Type::Float,
                lhs: ir::Expr::Var(var),
                rhs: ir::Expr::Const(bits),
                span: *span,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bits_decide_equality;

    #[test]
    fn only_the_zeros_and_nan_need_a_comparison() {
        for x in [
            1.5f32,
            -2.0,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            assert!(bits_decide_equality(x.to_bits()), "{x}");
        }
        for x in [0.0f32, -0.0, f32::NAN, -f32::NAN] {
            assert!(!bits_decide_equality(x.to_bits()), "{x}");
        }
    }
}
