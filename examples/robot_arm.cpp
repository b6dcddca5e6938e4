// Forward kinematics of a planar 3-link arm and its Jacobian by jacfwd, checked against the
// closed form. Joint angles theta; link lengths l; the tip is at
//   x = sum_i l_i cos(phi_i),  y = sum_i l_i sin(phi_i),  phi_i = theta_0 + ... + theta_i,
// so dx/dtheta_j = -sum_{i>=j} l_i sin(phi_i) and dy/dtheta_j = sum_{i>=j} l_i cos(phi_i).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"

using namespace pjrt_lite;

constexpr double kLengths[3] = {1.0, 0.8, 0.5};

/// The tip position (x, y) for joint angles theta (3 angles).
Tensor tip(const Tensor& theta) {
  // phi = L theta with L lower-triangular ones: the cumulative angles.
  Literal lower =
      Literal::from_span<double>(std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}, {3, 3}).value();
  Tensor phi = matmul(np::array(std::move(lower)), theta);
  Tensor l = np::array(Literal::vector<double>({kLengths[0], kLengths[1], kLengths[2]}));
  return stack({sum(l * cos(phi)), sum(l * sin(phi))});
}

int main() {
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  auto kinematics = jit(
      client, [](const Tensor& theta) { return std::make_pair(tip(theta), jacfwd(tip)(theta)); });

  const std::vector<double> theta{0.3, -0.7, 1.1};
  auto result = kinematics(Literal::vector<double>({theta[0], theta[1], theta[2]}));
  if (!result.ok()) {
    std::fprintf(stderr, "error: %s\n", result.status().to_string().c_str());
    return 1;
  }
  const auto& [position, jacobian] = *result;
  std::printf("theta = (%.2f, %.2f, %.2f)\n", theta[0], theta[1], theta[2]);
  std::printf("tip   = (%.6f, %.6f)\n", position.data<double>()[0], position.data<double>()[1]);

  double phi[3], worst = 0;
  phi[0] = theta[0];
  phi[1] = phi[0] + theta[1];
  phi[2] = phi[1] + theta[2];
  std::printf("Jacobian d(x, y)/d(theta) by jacfwd, and the closed form:\n");
  for (int row = 0; row < 2; ++row) {
    for (int j = 0; j < 3; ++j) {
      double closed = 0;
      for (int i = j; i < 3; ++i)
        closed += row == 0 ? -kLengths[i] * std::sin(phi[i]) : kLengths[i] * std::cos(phi[i]);
      const double got = jacobian.get<double>({row, j});
      worst = std::max(worst, std::abs(got - closed));
      std::printf("  %s/dtheta%d  % .6f  % .6f\n", row == 0 ? "dx" : "dy", j, got, closed);
    }
  }
  std::printf("largest difference: %.1e\n", worst);
  return worst < 1e-12 ? 0 : 1;
}
