"""The papers' cautionary cases with their exact audits (same numbers as `puffgm audit --case all`)."""

from puffgm.framework import audit_composition, audit_finite, audit_laplace
from puffgm.framework.adversaries import section_2_3_example
from puffgm.framework.cautionary import (
    bai_example_4_1,
    bai_example_4_2,
    bai_example_4_3,
    dp_as_pufferfish,
    exam_order,
    expected_runs_to_reveal,
    present_sum,
)

for case in (bai_example_4_1(), bai_example_4_2(3), bai_example_4_2(8), bai_example_4_3()):
    one = audit_finite(case.inst, case.mechanism).loss
    two = audit_composition(case.inst, case.mechanism, k=2).loss
    runs = expected_runs_to_reveal(case.inst, case.mechanism, target=case.target)["expected"]
    print(f"{case.name:28s} one run {one:.4g}, two runs {two}, expected runs to reveal the {case.target}: {runs:.4g}")

for n in (3, 8):
    inst = exam_order(n)
    print(f"exam order n={n}: Laplace(1) is 1-DP but its Pufferfish loss is "
          f"{audit_laplace(inst, lambda a: sum(a.values()), 1.0).loss:.4f}")

print("Theorem 6.1 (independent):", round(audit_laplace(dp_as_pufferfish(3), present_sum, 1.0).loss, 6),
      " Theorem 6.2 (correlated):",
      round(audit_laplace(dp_as_pufferfish(3, correlated=True), present_sum, 1.0).loss, 6))
r = section_2_3_example()
print(f"close adversary: exp(unconditioned) = {r['exp_unconditioned']:.4f}, exp(conditioned) = "
      f"{r['exp_conditioned']:.4f} (paper 91.0962 from rounded conditionals: {r['exp_paper_conditioned']:.4f})")
