#pragma once
// IWYU pragma: private, include "pjrt_lite/cpu.hpp"
// The members of LoadedExecutable that run or inspect its program, and Client::compile and
// deserialize_executable. executable.hpp includes this header unless
// PJRT_LITE_CPU_EXTERN_KERNELS is defined; pjrt_lite/cpu_instantiate.hpp always does.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt_lite/backends/cpu/buffer.hpp"
#include "pjrt_lite/backends/cpu/client.hpp"
#include "pjrt_lite/backends/cpu/detail/compile_program.hpp"
#include "pjrt_lite/backends/cpu/detail/executable_format.hpp"
#include "pjrt_lite/backends/cpu/detail/program.hpp"
#include "pjrt_lite/backends/cpu/detail/rendezvous.hpp"
#include "pjrt_lite/backends/cpu/device.hpp"
#include "pjrt_lite/backends/cpu/executable.hpp"
#include "pjrt_lite/backends/cpu/transport.hpp"
#include "pjrt_lite/core/runtime_types.hpp"
#include "pjrt_lite/future.hpp"
#include "pjrt_lite/ir/builder.hpp"
#include "pjrt_lite/ir/fingerprint.hpp"
#include "pjrt_lite/ir/printer.hpp"
#include "pjrt_lite/stablehlo/parser.hpp"
#include "pjrt_lite/transforms/spmd.hpp"
#if !defined(PJRT_LITE_CPU_EXTERN_KERNELS)
#include "pjrt_lite/backends/cpu/detail/compiler.hpp"
#endif

namespace pjrt_lite::inline v0_1::cpu {

namespace detail {

/// `graph` taking parameter i in the layout argument_layouts[i] and making output j in
/// result_layouts[j] (minor to major; empty: row-major). The program computes on row-major
/// arrays: a parameter in another layout is the row-major array of its dimensions taken major
/// to minor, transposed back after it is read, and such an output is transposed into it.
/// INVALID_ARGUMENT for a list of another length than the parameters or outputs, or an entry
/// that is not an order of its value's dimensions.
inline StatusOr<Graph> relayout(const Graph& graph, const std::vector<std::vector<std::int64_t>>& argument_layouts,
                                const std::vector<std::vector<std::int64_t>>& result_layouts) {
  const std::span<const Value> params = graph.parameters(), outputs = graph.outputs();
  if (!argument_layouts.empty() && argument_layouts.size() != params.size())
    return invalid_argument_error(str_cat("compile: CompileOptions.argument_layouts lists ", argument_layouts.size(),
                                          " layouts for the ", params.size(), " parameters of '", graph.name(), "'"));
  if (!result_layouts.empty() && result_layouts.size() != outputs.size())
    return invalid_argument_error(str_cat("compile: CompileOptions.result_layouts lists ", result_layouts.size(),
                                          " layouts for the ", outputs.size(), " outputs of '", graph.name(), "'"));
  auto laid_out = [](const Shape& s, const std::vector<std::vector<std::int64_t>>& layouts, std::size_t i,
                     std::string_view what) -> StatusOr<Shape> {
    if (i >= layouts.size()) return s.with_default_layout();
    return with_minor_to_major(s, layouts[i], str_cat("compile: CompileOptions.", what, "[", i, "]"));
  };
  GraphBuilder b(std::string(graph.name()));
  std::vector<Value> args;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Shape& s = graph.shape(params[i]);
    PJRT_LITE_ASSIGN_OR_RETURN(Shape laid, laid_out(s, argument_layouts, i, "argument_layouts"));
    if (laid.has_default_layout()) {
      args.push_back(b.parameter(s));
      continue;
    }
    const std::span<const std::int64_t> order = laid.major_to_minor();
    std::vector<std::int64_t> physical(order.size()), back(order.size());
    for (std::size_t j = 0; j < order.size(); ++j) {
      physical[j] = s.dim(order[j]);
      back[static_cast<std::size_t>(order[j])] = static_cast<std::int64_t>(j);
    }
    args.push_back(b.transpose(b.parameter(Shape(s.dtype(), physical)), back));
  }
  std::vector<Value> results = b.inline_graph(graph, args);
  for (std::size_t j = 0; j < results.size() && j < outputs.size(); ++j) {
    PJRT_LITE_ASSIGN_OR_RETURN(Shape laid, laid_out(graph.shape(outputs[j]), result_layouts, j, "result_layouts"));
    if (!laid.has_default_layout())
      results[j] = b.transpose(results[j], std::vector<std::int64_t>(laid.major_to_minor().begin(), laid.major_to_minor().end()));
  }
  return b.build(results);
}

}  // namespace detail

template <class E>
std::span<const Shape> LoadedExecutable<E>::parameter_shapes() const {
  return parameter_shapes_;
}

template <class E>
std::span<const Shape> LoadedExecutable<E>::output_shapes() const {
  return output_shapes_;
}

template <class E>
const CostAnalysis& LoadedExecutable<E>::cost_analysis() const {
  return program_->cost;
}

template <class E>
const MemoryStats& LoadedExecutable<E>::memory_stats() const {
  return program_->memory;
}

template <class E>
KernelIsa LoadedExecutable<E>::kernel_isa() const {
  return program_->kernel_isa;
}

template <class E>
std::string LoadedExecutable<E>::optimized_program_text() const {
  return str_cat(to_string(program_->graph), "\n", program_->text);
}

template <class E>
const Graph& LoadedExecutable<E>::optimized_graph() const {
  return program_->graph;
}

template <class E>
std::vector<std::string_view> LoadedExecutable<E>::kernel_names() const {
  std::vector<std::string_view> names;
  for (const auto& k : program_->kernels) names.push_back(k->text);
  return names;
}

template <class E>
std::span<const std::int32_t> LoadedExecutable<E>::node_kernels() const {
  return program_->node_kernel;
}

template <class E>
std::span<const std::int32_t> LoadedExecutable<E>::donation_targets() const {
  return program_->donation_target;
}

template <class E>
std::vector<std::byte> LoadedExecutable<E>::serialize() const {
  return detail::write_executable(source_, options_);
}

template <class E>
StatusOr<std::vector<std::vector<Buffer<E>>>> LoadedExecutable<E>::execute(
    std::span<const std::vector<Buffer<E>*>> per_device_args, const ExecuteOptions& options) {
  if (per_device_args.size() != devices_.size())
    return invalid_argument_error(str_cat("execute: ", per_device_args.size(), " argument lists given for ",
                                          devices_.size(), " addressable devices"));
  // All devices or none: every device's execution is prepared (arguments held, donations
  // reserved, outputs allocated) before any starts, and an error on any device lets every
  // argument go as it was. A donated buffer may appear in no other device's list (its
  // reservation would wait on itself).
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    Status s = validate(per_device_args[d], devices_[d], options);
    for (std::size_t k = 0; s.ok() && k < options.donated_arguments.size(); ++k) {
      const Buffer<E>* given = per_device_args[d][static_cast<std::size_t>(options.donated_arguments[k])];
      for (std::size_t other = 0; other < devices_.size(); ++other)
        if (other != d && std::find(per_device_args[other].begin(), per_device_args[other].end(), given) !=
                              per_device_args[other].end())
          s = invalid_argument_error(str_cat("execute: argument ", options.donated_arguments[k],
                                             " is donated but is also passed to device ",
                                             devices_[other]->debug_string()));
    }
    if (!s.ok()) return s.with_context(str_cat("device ", devices_[d]->debug_string()));
  }
  std::vector<std::unique_ptr<detail::RunState>> prepared(devices_.size());
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    StatusOr<std::unique_ptr<detail::RunState>> state = prepare(per_device_args[d], options);
    if (!state.ok()) {
      for (std::size_t e = 0; e < d; ++e) cancel(std::move(prepared[e]), per_device_args[e], options);
      return state.status().with_context(str_cat("device ", devices_[d]->debug_string()));
    }
    prepared[d] = std::move(state).value();
  }
  std::vector<std::vector<Buffer<E>>> results(devices_.size());
  if (rendezvous_) {
    // A grid: every participant at once, 0 on the caller, the others on the rendezvous's
    // threads; done when all are.
    std::vector<Status> statuses(devices_.size());
    struct TeamRun {
      LoadedExecutable* self;
      std::span<const std::vector<Buffer<E>*>> args;
      const ExecuteOptions* options;
      std::vector<std::unique_ptr<detail::RunState>>* prepared;
      std::vector<std::vector<Buffer<E>>>* results;
      std::vector<Status>* statuses;
    } run{this, per_device_args, &options, &prepared, &results, &statuses};
    rendezvous_->run_team(
        [](void* p, int k) {
          auto* t = static_cast<TeamRun*>(p);
          const auto i = static_cast<std::size_t>(k);
          const std::vector<Buffer<E>*>& a = t->args[i];
          (*t->statuses)[i] = t->self->run_participant(std::move((*t->prepared)[i]),
                                                       std::span<Buffer<E>* const>(a.data(), a.size()),
                                                       t->self->devices_[i], *t->options, (*t->results)[i],
                                                       t->self->participant_of(i));
        },
        &run);
    for (const Status& s : statuses)
      if (!s.ok()) return s.with_context(str_cat("execute '", name(), "'"));
    return results;
  }
  for (std::size_t d = 0; d < devices_.size(); ++d)
    start(std::move(prepared[d]), per_device_args[d], devices_[d], options, results[d]);
  return results;
}

template <class E>
std::span<const std::pair<std::int64_t, std::int64_t>> LoadedExecutable<E>::channel_bytes(const detail::Program& program) {
  return program.channels;
}

template <class E>
MemorySpace<E>* LoadedExecutable<E>::output_space(Device<E>* device, std::size_t j) const {
  if (j < options_.output_memory_kinds.size() && !options_.output_memory_kinds[j].empty())
    if (StatusOr<MemorySpace<E>*> m = device->memory_space_by_kind(options_.output_memory_kinds[j]); m.ok()) return *m;
  return device->memory_spaces().front();
}

template <class E>
std::vector<std::string_view> LoadedExecutable<E>::output_memory_kinds() const {
  std::vector<std::string_view> kinds;
  for (std::size_t j = 0; j < program_->output_shapes.size(); ++j)
    kinds.push_back(output_space(devices_.front(), j)->kind());
  return kinds;
}

template <class E>
Status LoadedExecutable<E>::execute_sharded(std::span<Buffer<E>* const> args, Device<E>* device,
                                            const ExecuteOptions& options, std::vector<Buffer<E>>& results) {
  if (device == nullptr || std::find(devices_.begin(), devices_.end(), device) == devices_.end())
    return invalid_argument_error(str_cat("execute_sharded: ", device ? device->debug_string() : std::string("null device"),
                                          " is not one of the executable's addressable devices"));
  return launch(args, device, options, results);
}

template <class E>
StatusOr<std::vector<Buffer<E>>> LoadedExecutable<E>::execute_portable(std::span<Buffer<E>* const> args,
                                                                        Device<E>* device,
                                                                        const ExecuteOptions& options) {
  if (devices_.size() != 1)
    return invalid_argument_error(str_cat("execute_portable: the executable is compiled for ", devices_.size(),
                                          " devices; portable execution needs one"));
  if (device == nullptr || device->client() != client_)
    return invalid_argument_error("execute_portable: the device is null or belongs to another client");
  std::vector<Buffer<E>> results;
  PJRT_LITE_RETURN_IF_ERROR(launch(args, device, options, results));
  return results;
}

template <class E>
Status LoadedExecutable<E>::validate(std::span<Buffer<E>* const> args, Device<E>* device,
                                     const ExecuteOptions& options) const {
  if (is_deleted()) return failed_precondition_error("execute: the executable has been deleted");
  const auto& params = parameter_shapes_;
  if (args.size() != params.size())
    return invalid_argument_error(str_cat("execute: ", args.size(), " arguments given, the program takes ", params.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Buffer<E>* a = args[i];
    if (a == nullptr) return invalid_argument_error(str_cat("execute: argument ", i, " is null"));
    if (a->client() == nullptr) return invalid_argument_error(str_cat("execute: argument ", i, " was moved from"));
    if (a->client() != client_) return invalid_argument_error(str_cat("execute: argument ", i, " belongs to another client"));
    if (a->device() != device)
      return invalid_argument_error(str_cat("execute: argument ", i, " is on ", a->device()->debug_string(),
                                            " but the execution runs on ", device->debug_string()));
    if (!a->on_device_shape().same_type_and_dims(params[i]))
      return invalid_argument_error(str_cat("execute: argument ", i, " has shape ", a->on_device_shape(), " but parameter ",
                                            i, " takes ", params[i]));
    if (i < options_.argument_memory_kinds.size() && !options_.argument_memory_kinds[i].empty() &&
        a->memory_space()->kind() != options_.argument_memory_kinds[i])
      return invalid_argument_error(str_cat("execute: argument ", i, " is in ", a->memory_space()->debug_string(),
                                            " but parameter ", i, " takes memory of kind '", options_.argument_memory_kinds[i],
                                            "' (CompileOptions::argument_memory_kinds; copy_to_memory_space moves it)"));
    if (!std::ranges::equal(a->on_device_shape().major_to_minor(), params[i].major_to_minor()))
      return invalid_argument_error(str_cat("execute: argument ", i, " is laid out minor to major as ",
                                            Shape::dims_string(a->minor_to_major()), " but parameter ", i, " takes ",
                                            Shape::dims_string(minor_to_major(params[i])),
                                            " (CompileOptions::argument_layouts; Buffer::copy_to_layout converts)"));
  }
  for (std::size_t k = 0; k < options.donated_arguments.size(); ++k) {
    const int d = options.donated_arguments[k];
    if (d < 0 || d >= static_cast<int>(args.size()))
      return invalid_argument_error(str_cat("execute: donated_arguments[", k, "] = ", d, " is not an argument index (0..",
                                            static_cast<int>(args.size()) - 1, ")"));
    for (std::size_t j = 0; j < k; ++j)
      if (options.donated_arguments[j] == d)
        return invalid_argument_error(str_cat("execute: argument ", d, " is donated twice"));
    for (std::size_t i = 0; i < args.size(); ++i)
      if (static_cast<int>(i) != d && args[i] == args[static_cast<std::size_t>(d)])
        return invalid_argument_error(str_cat("execute: argument ", d, " is donated but is also passed as argument ", i));
  }
  return ok_status();
}

template <class E>
bool LoadedExecutable<E>::donated(const ExecuteOptions& options, std::size_t i) {
  return std::find(options.donated_arguments.begin(), options.donated_arguments.end(), static_cast<int>(i)) !=
         options.donated_arguments.end();
}

template <class E>
Status LoadedExecutable<E>::launch(std::span<Buffer<E>* const> args, Device<E>* device,
                                   const ExecuteOptions& options, std::vector<Buffer<E>>& results) {
  PJRT_LITE_RETURN_IF_ERROR(validate(args, device, options));
  // The previous results go before this run's outputs are allocated, unless an argument is
  // one of them: their memory, back in the pool, then backs the new outputs, so a loop that
  // executes into the same list keeps reusing one set of blocks, still in cache, instead of
  // alternating between two.
  const auto in_results = [&](const Buffer<E>* arg) {
    return std::less_equal<const Buffer<E>*>()(results.data(), arg) &&
           std::less<const Buffer<E>*>()(arg, results.data() + results.size());
  };
  if (std::none_of(args.begin(), args.end(), in_results)) results.clear();
  PJRT_LITE_ASSIGN_OR_RETURN(std::unique_ptr<detail::RunState> state, prepare(args, options));
  if (rendezvous_) {
    // One participant of a grid, run here: the others come from other threads' calls.
    const auto i = static_cast<std::size_t>(std::find(devices_.begin(), devices_.end(), device) - devices_.begin());
    return run_participant(std::move(state), args, device, options, results, participant_of(i))
        .with_context(str_cat("execute '", name(), "' on ", device->debug_string()));
  }
  start(std::move(state), args, device, options, results);
  return ok_status();
}

template <class E>
Status LoadedExecutable<E>::run_participant(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args,
                                            Device<E>* device, const ExecuteOptions& options,
                                            std::vector<Buffer<E>>& results, int participant) {
  const detail::Program& program = *program_;
  for (int d : options.donated_arguments)
    state->holds[static_cast<std::size_t>(d)] = args[static_cast<std::size_t>(d)]->commit_donation();
  results.clear();
  Status status;
  for (const auto& h : state->holds) {
    Status s = h.ready.await();
    if (!s.ok() && status.ok()) status = s;
  }
  detail::CollectiveContext* context = rendezvous_->begin_run(participant);
  state->collectives = context;
  state->feeds = &device->feed_queues();
  // The participants run at once, each on a thread: they share the pool's threads.
  state->max_workers =
      std::max(1, program.max_workers / static_cast<int>(rendezvous_->local_participants().size()));
  if (status.ok()) {
    detail::ObservedSpan span(client_->observer(), SpanKind::kExecute, name(), program.cost.bytes_accessed);
    program.run(*state, &client_->executor(), client_->observer());
    status = !context->status.ok() ? context->status : state->status;
    if (!status.ok()) rendezvous_->fail(status);
  } else {
    // The others must not wait for this participant until the timeout.
    rendezvous_->fail(status);
  }
  rendezvous_->end_run();
  Future<void> ready = status.ok() ? make_ready_future() : make_error_future<void>(status);
  for (std::size_t j = 0; j < program.output_shapes.size(); ++j)
    results.push_back(detail::BufferAccess::make(client_, output_space(device, j), output_shapes_[j],
                                                 std::move(state->outputs[j]), ready));
  program.release_state(std::move(state));
  return status;
}

template <class E>
StatusOr<std::unique_ptr<detail::RunState>> LoadedExecutable<E>::prepare(std::span<Buffer<E>* const> args,
                                                                        const ExecuteOptions& options) {
  const detail::Program& program = *program_;
  std::unique_ptr<detail::RunState> state = program.acquire_state();
  // A new run state (another execution holds the cached one) allocates its arena here.
  if (program.arena_bytes > 0 && state->arena == nullptr)  // dropped, not cached
    return resource_exhausted_error(
        str_cat("execute: the arena of ", program.arena_bytes, " bytes for a concurrent execution could not be allocated"));
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (donated(options, i)) continue;
    StatusOr<detail::BufferHold> hold = detail::BufferAccess::acquire(*args[i], "execute: argument", i);
    if (!hold.ok()) {
      program.release_state(std::move(state));
      return hold.status();
    }
    state->holds[i] = std::move(hold).value();
  }
  // Donation is a transaction: every donated argument is reserved (in the order of the
  // buffers' ids, so concurrent executes donating the same buffers cannot wait on each
  // other) before any is taken, and an error on any of them, or in allocating the outputs,
  // leaves them all as they were.
  const std::size_t donations = options.donated_arguments.size();
  std::span<int> order(state->donation_order.data(), donations);
  std::copy(options.donated_arguments.begin(), options.donated_arguments.end(), order.begin());
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    return std::less<const void*>()(args[static_cast<std::size_t>(x)]->id(), args[static_cast<std::size_t>(y)]->id());
  });
  auto fail = [&](std::size_t reserved, Status error) {
    for (std::size_t k = 0; k < reserved; ++k) args[static_cast<std::size_t>(order[k])]->cancel_donation();
    program.release_state(std::move(state));
    return error;
  };
  for (std::size_t k = 0; k < donations; ++k)
    if (Status s = args[static_cast<std::size_t>(order[k])]->reserve_donation("execute: donated argument",
                                                                              static_cast<std::size_t>(order[k]));
        !s.ok())
      return fail(k, std::move(s));

  // An output may take over a donated argument's memory when nobody else can see it: no
  // pending reads, no external references, not the caller's read-only zero-copy data.
  for (std::size_t j = 0; j < program.output_shapes.size(); ++j) state->outputs[j] = nullptr;
  for (std::size_t k = 0; k < donations; ++k) {
    const auto i = static_cast<std::size_t>(order[k]);
    const std::int32_t target = program.donation_target[i];
    const detail::MemoryRef& memory = args[i]->reserved_memory();
    if (target >= 0 && memory->writable && memory.use_count() == 1 && !state->outputs[static_cast<std::size_t>(target)])
      state->outputs[static_cast<std::size_t>(target)] = memory;  // the same block after commit_donation()
  }
  for (std::size_t j = 0; j < program.output_shapes.size(); ++j) {
    if (state->outputs[j]) continue;
    const auto bytes = static_cast<std::size_t>(program.output_shapes[j].byte_size());
    detail::MemoryRef memory = client_->allocate_memory(bytes);
    if (!memory || (bytes > 0 && memory->data == nullptr)) {
      return fail(donations, resource_exhausted_error(str_cat("execute: output ", j, " (", output_shapes_[j],
                                                              ", ", bytes, " bytes) could not be allocated")));
    }
    state->outputs[j] = std::move(memory);
  }
  return state;
}

template <class E>
void LoadedExecutable<E>::cancel(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args,
                                 const ExecuteOptions& options) {
  for (int d : options.donated_arguments) args[static_cast<std::size_t>(d)]->cancel_donation();
  program_->release_state(std::move(state));
}

template <class E>
void LoadedExecutable<E>::start(std::unique_ptr<detail::RunState> state, std::span<Buffer<E>* const> args,
                                Device<E>* device, const ExecuteOptions& options, std::vector<Buffer<E>>& results) {
  const detail::Program& program = *program_;
  for (int d : options.donated_arguments)
    state->holds[static_cast<std::size_t>(d)] = args[static_cast<std::size_t>(d)]->commit_donation();
  // Previous results still in the list are arguments of this run (launch let the others go
  // before the outputs were allocated); held now, their buffers can go too.
  results.clear();

  bool all_ready = true;
  for (const auto& h : state->holds) all_ready &= h.ready.is_ready();
  const bool threaded = client_->executor().num_threads() > 0;
  const bool synchronous =
      options.mode == ExecutionMode::kSynchronous || !threaded ||
      (options.mode == ExecutionMode::kDefault && all_ready && program.cost.bytes_accessed < kInlineBytes &&
       program.cost.flops < kInlineFlops);

  Observer* const observer = client_->observer();
  state->feeds = &device->feed_queues();
  if (synchronous) {
    Status status;
    for (const auto& h : state->holds) {
      Status s = h.ready.await();
      if (!s.ok() && status.ok()) status = s;
    }
    if (status.ok()) {
      detail::ObservedSpan span(observer, SpanKind::kExecute, name(), program.cost.bytes_accessed);
      program.run(*state, &client_->executor(), observer);
      status = state->status;
    }
    Future<void> ready = status.ok() ? make_ready_future() : make_error_future<void>(status);
    for (std::size_t j = 0; j < program.output_shapes.size(); ++j)
      results.push_back(detail::BufferAccess::make(client_, output_space(device, j), output_shapes_[j],
                                                   std::move(state->outputs[j]), ready));
    program.release_state(std::move(state));
    return;
  }

  auto [promise, ready] = make_promise<void>();
  for (std::size_t j = 0; j < program.output_shapes.size(); ++j)
    results.push_back(detail::BufferAccess::make(client_, output_space(device, j), output_shapes_[j],
                                                 state->outputs[j], ready));
  std::vector<Future<void>> pending;
  for (const auto& h : state->holds)
    if (!h.ready.is_ready() || !h.ready.await().ok()) pending.push_back(h.ready);
  // The task holds the program, the run state, the promise and the client (whose executor
  // outlives every task it runs): it fits UniqueFunction's inline storage, so offering it
  // allocates nothing. It is offered on the outputs' ready future and handed to a worker: a
  // thread that awaits an output (or a host copy of one) before the worker has started runs
  // it itself, so the common execute-then-await costs no hand-off and no wake-up; one that
  // comes later helps the worker with the program's parallel loops.
  join(pending).on_ready([program = program_, state = std::move(state), promise = std::move(promise),
                          client = client_](const Status& status) mutable {
    if (!status.ok()) {
      program->release_state(std::move(state));
      promise.set_error(status);
      return;
    }
    std::shared_ptr<pjrt_lite::detail::OfferedWork> offered = pjrt_lite::detail::FutureAccess::work(promise);
    auto task = [program = std::move(program), state = std::move(state), promise = std::move(promise),
                 client]() mutable {
      E* executor = &client->executor();
      Observer* const observer = client->observer();
      {
        // The program's graph outlives the span: the program is held here.
        detail::ObservedSpan span(observer, SpanKind::kExecute, program->graph.name(), program->cost.bytes_accessed);
        program->run(*state, executor, observer);
      }
      Status status = state->status;
      program->release_state(std::move(state));
      if (status.ok())
        promise.set_value();
      else
        promise.set_error(status);
    };
    static_assert(UniqueFunction<void()>::template stores_inline<decltype(task)>(),
                  "an asynchronous execute's task must fit a UniqueFunction without allocating");
    // A thread that awaits the outputs while a worker runs the program runs the blocks its
    // parallel loops queue on the pool.
    offered->offer(std::move(task), {[](void* executor) { return static_cast<E*>(executor)->try_run_one(); },
                                     &client->executor()});
    client->executor().schedule([offered = std::move(offered)] { offered->run_if_offered(); });
  });
}

template <class E>
StatusOr<LoadedExecutable<E>> Client<E>::compile(const Graph& graph, const CompileOptions& options) {
  if (options.device_ids.empty()) return invalid_argument_error("compile: CompileOptions.device_ids is empty");
  if (options.num_replicas < 1 || options.num_partitions < 1)
    return invalid_argument_error(str_cat("compile: a grid of ", options.num_replicas, " replicas x ",
                                          options.num_partitions, " partitions"));
  if (options.collective_timeout_ms < 0)
    return invalid_argument_error(str_cat("compile: collective_timeout_ms is negative (", options.collective_timeout_ms, ")"));
  const int participants = options.num_replicas * options.num_partitions;
  std::vector<int> ids = options.device_ids;
  std::string_view source = "CompileOptions.device_ids";
  if (options.device_assignment) {
    const DeviceAssignment& a = *options.device_assignment;
    if (a.num_replicas != options.num_replicas || a.num_partitions != options.num_partitions ||
        a.device_ids.size() != static_cast<std::size_t>(participants))
      return invalid_argument_error(str_cat("compile: the device assignment is ", a.num_replicas, " x ", a.num_partitions,
                                            " with ", a.device_ids.size(), " devices, but the grid is ",
                                            options.num_replicas, " x ", options.num_partitions));
    ids = a.device_ids;
    source = "CompileOptions.device_assignment";
  } else if (participants > 1 && ids.size() != static_cast<std::size_t>(participants)) {
    if (ids != std::vector<int>{0})
      return invalid_argument_error(str_cat("compile: a grid of ", participants, " participants needs ", participants,
                                            " devices, but CompileOptions.device_ids lists ", ids.size()));
    PJRT_LITE_ASSIGN_OR_RETURN(DeviceAssignment a,
                               get_default_device_assignment(options.num_replicas, options.num_partitions));
    ids = a.device_ids;
    source = "the default device assignment";
  }
  std::vector<Device<E>*> devices;
  for (int id : ids) {
    StatusOr<Device<E>*> d = lookup_device(id);
    if (!d.ok()) return d.status().with_context(str_cat("compile: ", source));
    if (std::find(devices.begin(), devices.end(), *d) != devices.end())
      return invalid_argument_error(str_cat("compile: device ", id, " appears twice in ", source));
    devices.push_back(*d);
  }
  // This process's devices, in the order of their participants; the processes that host
  // participants, ascending.
  std::vector<Device<E>*> local;
  std::vector<int> processes;
  for (Device<E>* d : devices) {
    if (d->is_addressable()) local.push_back(d);
    if (std::find(processes.begin(), processes.end(), d->process_index()) == processes.end())
      processes.push_back(d->process_index());
  }
  std::sort(processes.begin(), processes.end());
  if (participants == 1 && local.empty())
    return invalid_argument_error(str_cat("compile: device ", ids[0], " belongs to process ",
                                          devices[0]->process_index(), ", not to this process (", process_index(), ")"));
  if (!options.output_memory_kinds.empty()) {
    if (options.output_memory_kinds.size() != graph.outputs().size())
      return invalid_argument_error(str_cat("compile: CompileOptions.output_memory_kinds lists ",
                                            options.output_memory_kinds.size(), " kinds for the ",
                                            graph.outputs().size(), " outputs of '", graph.name(), "'"));
  }
  if (!options.argument_memory_kinds.empty() && options.argument_memory_kinds.size() != graph.parameters().size())
    return invalid_argument_error(str_cat("compile: CompileOptions.argument_memory_kinds lists ",
                                          options.argument_memory_kinds.size(), " kinds for the ",
                                          graph.parameters().size(), " parameters of '", graph.name(), "'"));
  for (const auto& [kinds, what] : {std::pair{&options.output_memory_kinds, "output_memory_kinds"},
                                    std::pair{&options.argument_memory_kinds, "argument_memory_kinds"}})
    for (std::size_t j = 0; j < kinds->size(); ++j)
      if (const std::string& kind = (*kinds)[j];
          !kind.empty() && std::find(std::begin(kMemoryKinds), std::end(kMemoryKinds), kind) == std::end(kMemoryKinds))
        return not_found_error(str_cat("compile: CompileOptions.", what, "[", j, "]: CPU devices have no memory space of kind '",
                                       kind, "' (they have device, pinned_host, unpinned_host)"));
  // Custom layouts: the program reads and writes them through transposes (checked here even
  // when the cache has the program, so that the executable's shapes are valid).
  const bool relaid = !options.argument_layouts.empty() || !options.result_layouts.empty();
  Graph laid_out;
  if (relaid) {
    PJRT_LITE_ASSIGN_OR_RETURN(laid_out, detail::relayout(graph, options.argument_layouts, options.result_layouts));
  }
  detail::ObservedSpan span(observer(), SpanKind::kCompile, graph.name());
  const std::uint64_t key = fingerprint(graph);
  std::shared_ptr<const detail::Program> shared = cache_lookup(key, graph, options);
  if (!shared) {
    StatusOr<std::shared_ptr<detail::Program>> program =
        detail::compile_program(relaid ? laid_out : graph, options, executor_.num_threads() + 1);
    if (!program.ok()) return program.status().with_context(str_cat("compile '", graph.name(), "'"));
    shared = std::move(program).value();
    PJRT_LITE_RETURN_IF_ERROR(prepare_first_run(*shared).with_context(str_cat("compile '", graph.name(), "'")));
    cache_insert(key, graph, options, shared);
  }
  if (processes.size() <= 1 || local.empty())
    return LoadedExecutable<E>(this, std::move(shared), std::move(local), options, graph);
  // A grid across processes: its own transport among the processes that host participants
  // (every one of them makes the same split here, compiling the same programs in the same
  // order).
  if (shared->unpaired_channels)
    return unimplemented_error(str_cat("compile '", graph.name(), "': a send or recv without source_target_pairs ",
                                       "in a grid that spans processes (such a channel has no known peer process)"));
  StatusOr<std::unique_ptr<Transport>> split = options_.transport->split(processes);
  if (!split.ok()) return split.status().with_context(str_cat("compile '", graph.name(), "'"));
  detail::RemoteParticipants remote{std::move(split).value(), {}};
  for (Device<E>* d : devices)
    remote.process.push_back(static_cast<int>(std::find(processes.begin(), processes.end(), d->process_index()) -
                                              processes.begin()));
  auto rendezvous = std::make_shared<detail::Rendezvous>(options.num_replicas, options.num_partitions,
                                                         std::chrono::milliseconds(options.collective_timeout_ms),
                                                         shared->channels, std::move(remote));
  return LoadedExecutable<E>(this, std::move(shared), std::move(local), options, graph, std::move(rendezvous));
}

template <class E>
StatusOr<LoadedExecutable<E>> Client<E>::deserialize_executable(std::span<const std::byte> bytes) {
  PJRT_LITE_ASSIGN_OR_RETURN(auto parts, detail::read_executable(bytes));
  StatusOr<LoadedExecutable<E>> exe = compile(parts.first, parts.second);
  if (!exe.ok()) return exe.status().with_context("deserialize_executable");
  return exe;
}

template <class E>
StatusOr<LoadedExecutable<E>> Client<E>::compile(std::string_view stablehlo_text, const CompileOptions& options) {
  StatusOr<stablehlo::Module> module = stablehlo::parse_module(stablehlo_text);
  if (!module.ok()) return module.status().with_context("compile");
  const stablehlo::Function* entry = module->find("main");
  if (entry == nullptr) {
    for (const stablehlo::Function& f : module->functions) {
      if (f.visibility != stablehlo::Visibility::kPublic) continue;
      if (entry != nullptr)
        return invalid_argument_error("compile: the module has no @main and several public functions");
      entry = &f;
    }
  }
  if (entry == nullptr) return invalid_argument_error("compile: the module has no @main and no public function");
  // The results' memory kinds (mhlo.memory_kind, annotate_device_placement), unless the
  // options name their own.
  CompileOptions with_kinds = options;
  if (with_kinds.output_memory_kinds.empty() &&
      std::any_of(entry->result_memory_kinds.begin(), entry->result_memory_kinds.end(),
                  [](const std::string& k) { return !k.empty(); }))
    with_kinds.output_memory_kinds = entry->result_memory_kinds;
  if (with_kinds.argument_memory_kinds.empty()) with_kinds.argument_memory_kinds = entry->argument_memory_kinds;
  // The layouts its arguments and results name (mhlo.layout_mode), likewise.
  if (with_kinds.argument_layouts.empty()) with_kinds.argument_layouts = entry->argument_layouts;
  if (with_kinds.result_layouts.empty()) with_kinds.result_layouts = entry->result_layouts;
  // The checked values are extra outputs of a test program's graph; a compiled program returns
  // only the function's results.
  Graph graph = entry->graph;
  if (static_cast<std::int64_t>(graph.outputs().size()) != entry->num_results) {
    GraphParts parts = graph.to_parts();
    parts.outputs.resize(static_cast<std::size_t>(entry->num_results));
    graph = Graph::from_parts(std::move(parts));
  }
  const ShardingPlan& plan = entry->sharding;
  if (plan.num_partitions <= 1) return compile(graph, with_kinds);
  // A program over several partitions (mhlo.num_partitions): each device runs its part.
  if (options.num_partitions != 1 && options.num_partitions != plan.num_partitions)
    return invalid_argument_error(str_cat("compile: CompileOptions::num_partitions is ", options.num_partitions,
                                          " but the module's mhlo.num_partitions is ", plan.num_partitions));
  if (options.num_replicas != 1)
    return unimplemented_error(str_cat("compile: a program partitioned over ", plan.num_partitions,
                                       " partitions and ", options.num_replicas, " replicas"));
  with_kinds.num_partitions = static_cast<int>(plan.num_partitions);
  StatusOr<PartitionedProgram> partitioned = partition(graph, plan);
  if (!partitioned.ok()) return partitioned.status().with_context("compile");
  StatusOr<LoadedExecutable<E>> exe = compile(partitioned->graph, with_kinds);
  if (!exe.ok()) return exe;
  exe->parameter_shardings_ = std::move(partitioned->parameter_shardings);
  exe->output_shardings_ = std::move(partitioned->output_shardings);
  exe->gathered_ops_ = std::move(partitioned->gathered);
  return exe;
}

}  // namespace pjrt_lite::cpu
