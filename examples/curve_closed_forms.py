"""Closed forms of Bai et al. checked against the general computation.

Theorem 8 (binary stationary chain): where the closed form and the exact quilt
computation disagree; Example 6.2 (truncated Gaussian, GP kernel): the trend of
Figure 2b, and the certified l = 0.5 curve; and a curve for a pgmpy LinearGaussianBayesianNetwork.
"""

from puffgm.chains.closed_forms import binary_chain_curve, closed_form_disagreement
from puffgm.gaussian.closed_forms import CurveOptions, gaussian_network_curve, gp_covariance, gp_region_curve
from puffgm.gaussian.leakage import GaussianRegionModel

for p, q in [(0.9, 0.7), (0.3, 0.2), (0.1, 0.05)]:
    d = closed_form_disagreement(p, q, 12)
    dm = closed_form_disagreement(p, q, 12, absolute=False)
    print(f"p={p}, q={q}: appendix form overstates at b={d['over_b']} (max {d['max_over']:.3g}); "
          f"main-text form understates by up to {dm['max_under']:.3g}")
print(binary_chain_curve(0.3, 0.2, 6).explain(), "\n")

print("Figure 2b (n = 20, gamma = 5, delta = 0.1), a(b) for b = 1..8:")
for ell in (0.5, 1, 2, 3, 5):
    c = gp_region_curve(20, ell, 5.0, 0.1, max_b=8, center_only=True, options=CurveOptions(value="theorem9"))
    print(f"  l = {ell:>3}: " + " ".join(f"{a:9.3g}" for a in c.a))

# certified l = 0.5 curve: from b = 5 on the mixed-derivative range bound lets the truncation of the other
# high-influence coordinates cancel between numerator and denominator (the Bonferroni bound charges it to both)
safe = gp_region_curve(20, 0.5, center_only=True)
print("certified, l = 0.5, b = 1..20: " + " ".join(f"{a:.4g}" for a in safe.a))
H7 = list(range(6, 13))   # b = 7 around the centre coordinate 9; L = the 13 farthest coordinates
split = GaussianRegionModel(gp_covariance(20, 0.5), -5.0, 5.0, 0.1).leakage(9, [k for k in range(20) if k not in H7])
print(f"  b = 7: Bonferroni {split.details['bonferroni']:.3g}, mixed range {split.details['mixed_range']:.3g} "
      f"-> {split.value:.3g} nats (Theorem 9: {split.theorem9:.3g}, not certified)")

from pgmpy.factors.continuous import LinearGaussianCPD  # noqa: E402
from pgmpy.models import LinearGaussianBayesianNetwork  # noqa: E402

m = LinearGaussianBayesianNetwork([("income", "spending"), ("spending", "savings"), ("income", "savings")])
m.add_cpds(LinearGaussianCPD("income", [0.0], 1.0), LinearGaussianCPD("spending", [0.0, 0.6], 0.6, ["income"]),
           LinearGaussianCPD("savings", [0.0, 0.5, -0.4], 0.5, ["income", "spending"]))
print("\n" + gaussian_network_curve(m, (-4.0, 4.0), 0.25).explain())
