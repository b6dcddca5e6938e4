// Forward and reverse mode on f(x) = -(sin(x) * 2) + x, as jax.grad and jax.jit do it: trace the
// C++ function into a program, differentiate the program, compile, run.

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "pjrt_lite/cpu.hpp"
#include "pjrt_lite/frontend.hpp"
#include "pjrt_lite/ir/printer.hpp"

using namespace pjrt_lite;

// The shortest decimal that reads back as the same double, as Python prints floats.
std::string shortest(const StatusOr<Literal>& r) {
  if (!r.ok()) return r.status().to_string();
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, r->data<double>()[0]);
  return std::string(buf, end);
}

int main() {
  auto client = cpu::Client<cpu::InlineExecutor>::create().value();
  auto f = [](Tensor x) { return -(sin(x) * 2.0) + x; };

  auto jf = jit(client, f);
  auto df = jit(client, grad(f));
  const double x = 3.0;
  std::cout << "f(x)  = " << shortest(jf(x)) << "\n";
  std::cout << "f'(x) = " << shortest(df(x)) << "\n";

  std::cout << "\nthe traced program of f:\n" << to_string(jf.lower(x).value());
  std::cout << "\nthe program of grad(f), before the compiler simplifies it:\n"
            << to_string(df.lower(x).value());

  // The same derivative by forward mode, and the second derivative, 2 sin(x).
  auto fwd = jit(client, [&](Tensor t) { return jvp(f, t, ones_like(t)).second; });
  auto d2 = jit(client, grad(grad(f)));
  std::cout << "\njvp(f, x, 1)    = " << shortest(fwd(x)) << "\n";
  std::cout << "grad(grad f)(x) = " << shortest(d2(x)) << " (2 sin x)\n";

  // The closed forms: f'(x) = 1 - 2 cos x, f''(x) = 2 sin x. Exit 1 unless they match.
  const auto value = [](const StatusOr<Literal>& r) { return r.ok() ? r->data<double>()[0] : NAN; };
  const double errors[] = {std::abs(value(df(x)) - (1 - 2 * std::cos(x))),
                           std::abs(value(fwd(x)) - (1 - 2 * std::cos(x))),
                           std::abs(value(d2(x)) - 2 * std::sin(x))};
  for (double e : errors)
    if (!(e <= 1e-14)) {
      std::cout << "a derivative differs from its closed form by " << e << "\n";
      return 1;
    }
  return 0;
}
