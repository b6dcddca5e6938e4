#pragma once
// A traced executable: owns one of the inner client's executables, forwards every call and
// reports it; arguments are unwrapped on the way in and results wrapped on the way out.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt_lite/concepts.hpp"
#include "pjrt_lite/trace/buffer.hpp"
#include "pjrt_lite/trace/device.hpp"
#include "pjrt_lite/trace/forward.hpp"

namespace pjrt_lite::inline v0_1::trace {

/// An executable compiled by a Traced client. Satisfies PjRtLoadedExecutable; move-only. The
/// inner executable lives on the heap, so its address names it in records across moves.
/// Thread-safe as the inner executable is.
template <PjRtClient C, Sink S>
class TracedExecutable {
 public:
  using loaded_executable_concept = loaded_executable_tag;
  using inner_type = typename C::executable_type;
  using buffer_type = TracedBuffer<C, S>;
  using device_type = TracedDevice<C, S>;

  TracedExecutable(Traced<C, S>* client, inner_type inner)
      : client_(client), inner_(std::make_unique<inner_type>(std::move(inner))) {
    for (auto* d : inner_->addressable_devices()) devices_.push_back(client_->wrap(d));
  }
  TracedExecutable(TracedExecutable&&) noexcept = default;
  TracedExecutable& operator=(TracedExecutable&&) noexcept = default;

  [[nodiscard]] std::string_view name() const {
    return tracer().call("executable", id(), "name", {},
                         [&]() -> std::string_view { return inner_->name(); });
  }
  [[nodiscard]] std::span<TracedDevice<C, S>* const> addressable_devices() const {
    return tracer().call("executable", id(), "addressable_devices", {},
                         [&] { return std::span<TracedDevice<C, S>* const>(devices_); });
  }

  /// Runs on every addressable device, `per_device_args[d]` on addressable_devices()[d].
  [[nodiscard]] StatusOr<std::vector<std::vector<TracedBuffer<C, S>>>> execute(
      std::span<const std::vector<TracedBuffer<C, S>*>> per_device_args,
      const ExecuteOptions& options = {}) {
    return tracer().call("executable", id(), "execute", describe(per_device_args),
                         [&]() -> StatusOr<std::vector<std::vector<TracedBuffer<C, S>>>> {
                           std::vector<std::vector<typename C::buffer_type*>> inner_args;
                           for (const auto& args : per_device_args)
                             inner_args.push_back(unwrap(args));
                           auto r = inner_->execute(
                               std::span<const std::vector<typename C::buffer_type*>>(inner_args),
                               options);
                           if (!r.ok()) return r.status();
                           std::vector<std::vector<TracedBuffer<C, S>>> out;
                           for (auto& per_device : *r) out.push_back(wrap(std::move(per_device)));
                           return out;
                         });
  }
  /// For an executable on one device, where the inner executable has this door: runs there
  /// and returns that device's outputs.
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute(
      std::span<TracedBuffer<C, S>* const> args, const ExecuteOptions& options = {}) requires
      requires(inner_type& x, std::span<typename C::buffer_type* const> a, const ExecuteOptions& o) {
    { x.execute(a, o) } -> std::same_as<StatusOr<std::vector<typename C::buffer_type>>>;
  }
  {
    return tracer().call("executable", id(), "execute", describe(args),
                         [&]() -> StatusOr<std::vector<TracedBuffer<C, S>>> {
                           std::vector<typename C::buffer_type*> inner_args = unwrap(args);
                           auto r = inner_->execute(
                               std::span<typename C::buffer_type* const>(inner_args), options);
                           if (!r.ok()) return r.status();
                           return wrap(std::move(r).value());
                         });
  }
  /// As above, with the arguments listed in place: `exe.execute({&x, &y})`.
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute(
      std::initializer_list<TracedBuffer<C, S>*> args, const ExecuteOptions& options = {}) requires
      requires(inner_type& x, std::span<typename C::buffer_type* const> a, const ExecuteOptions& o) {
    { x.execute(a, o) } -> std::same_as<StatusOr<std::vector<typename C::buffer_type>>>;
  }
  {
    return execute(std::span<TracedBuffer<C, S>* const>(args.begin(), args.size()), options);
  }
  /// Runs on one of the addressable devices.
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute_sharded(
      std::span<TracedBuffer<C, S>* const> args, TracedDevice<C, S>* device,
      const ExecuteOptions& options = {}) {
    return run_on_device("execute_sharded", args, device, [&](auto inner_args, auto* d) {
      return inner_->execute_sharded(inner_args, d, options);
    });
  }
  /// As above, with the arguments listed in place: `exe.execute_sharded({&x, &y}, device)`.
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute_sharded(
      std::initializer_list<TracedBuffer<C, S>*> args, TracedDevice<C, S>* device,
      const ExecuteOptions& options = {}) {
    return execute_sharded(std::span<TracedBuffer<C, S>* const>(args.begin(), args.size()),
                           device, options);
  }
  /// Runs on any device of the client (an executable compiled for one device).
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute_portable(
      std::span<TracedBuffer<C, S>* const> args, TracedDevice<C, S>* device,
      const ExecuteOptions& options = {}) {
    return run_on_device("execute_portable", args, device, [&](auto inner_args, auto* d) {
      return inner_->execute_portable(inner_args, d, options);
    });
  }
  /// As above, with the arguments listed in place: `exe.execute_portable({&x, &y}, device)`.
  [[nodiscard]] StatusOr<std::vector<TracedBuffer<C, S>>> execute_portable(
      std::initializer_list<TracedBuffer<C, S>*> args, TracedDevice<C, S>* device,
      const ExecuteOptions& options = {}) {
    return execute_portable(std::span<TracedBuffer<C, S>* const>(args.begin(), args.size()),
                            device, options);
  }
  void delete_executable() {
    tracer().call("executable", id(), "delete_executable", {},
                  [&] { inner_->delete_executable(); });
  }
  [[nodiscard]] bool is_deleted() const {
    return tracer().call("executable", id(), "is_deleted", {},
                         [&] { return inner_->is_deleted(); });
  }

  // ---- What the inner executable has beyond the concept.
  [[nodiscard]] decltype(auto) parameter_shapes() const requires requires(const inner_type& x) {
    x.parameter_shapes();
  }
  {
    return tracer().call("executable", id(), "parameter_shapes", {},
                         [&] { return inner_->parameter_shapes(); });
  }
  [[nodiscard]] decltype(auto) output_shapes() const requires requires(const inner_type& x) {
    x.output_shapes();
  }
  {
    return tracer().call("executable", id(), "output_shapes", {},
                         [&] { return inner_->output_shapes(); });
  }
  [[nodiscard]] std::string optimized_program_text() const requires requires(const inner_type& x) {
    x.optimized_program_text();
  }
  {
    return tracer().call("executable", id(), "optimized_program_text", {},
                         [&] { return std::string(inner_->optimized_program_text()); });
  }
  [[nodiscard]] decltype(auto) serialize() const requires requires(const inner_type& x) {
    x.serialize();
  }
  {
    return tracer().call("executable", id(), "serialize", {}, [&] { return inner_->serialize(); });
  }

  /// The Traced client that compiled this executable (not reported).
  [[nodiscard]] Traced<C, S>* client() const { return client_; }
  /// The wrapped executable, e.g. for to_dot (not reported).
  [[nodiscard]] inner_type& inner() { return *inner_; }
  [[nodiscard]] const inner_type& inner() const { return *inner_; }
  /// What names this executable in records: the inner executable's address.
  [[nodiscard]] const void* id() const { return inner_.get(); }
  /// For trace records: id() as an address.
  [[nodiscard]] std::string trace_describe() const { return detail::format_address(id()); }

 private:
  Tracer<S>& tracer() const { return client_->tracer(); }

  static typename C::device_type* inner_device(TracedDevice<C, S>* d) {
    return d != nullptr ? d->inner() : nullptr;
  }
  static std::vector<typename C::buffer_type*> unwrap(std::span<TracedBuffer<C, S>* const> args) {
    std::vector<typename C::buffer_type*> out;
    out.reserve(args.size());
    for (TracedBuffer<C, S>* a : args) out.push_back(a != nullptr ? &a->inner() : nullptr);
    return out;
  }
  std::vector<TracedBuffer<C, S>> wrap(std::vector<typename C::buffer_type> buffers) const {
    std::vector<TracedBuffer<C, S>> out;
    out.reserve(buffers.size());
    for (auto& b : buffers) out.emplace_back(client_, std::move(b));
    return out;
  }
  // One of the single-device doors: `run(inner arguments, inner device)` calls the inner one.
  template <class F>
  StatusOr<std::vector<TracedBuffer<C, S>>> run_on_device(
      std::string_view method, std::span<TracedBuffer<C, S>* const> args,
      TracedDevice<C, S>* device, F run, SourceLocation where = SourceLocation::current()) {
    return tracer().call(
        "executable", id(), method, str_cat(describe(args), " on ", describe(device)),
        [&]() -> StatusOr<std::vector<TracedBuffer<C, S>>> {
          std::vector<typename C::buffer_type*> inner_args = unwrap(args);
          auto r = run(std::span<typename C::buffer_type* const>(inner_args), inner_device(device));
          if (!r.ok()) return r.status();
          return wrap(std::move(r).value());
        },
        where);
  }

  Traced<C, S>* client_;
  std::unique_ptr<inner_type> inner_;
  std::vector<TracedDevice<C, S>*> devices_;
};

}  // namespace pjrt_lite::trace
