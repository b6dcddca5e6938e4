#include <pjrt_lite/cpu_instantiate.hpp>
