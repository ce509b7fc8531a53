// Replay of recorded slice and ring traces against the C++ golden model (slice.hpp), every
// output in every cycle, as tb/slice/trace.py and tb/ring/trace.py replay them in Python.
// Built and called by tb/fast/__init__.py (ctypes). This file: the buffers the Python side
// copies out, and the lane sums alone (for the test that holds them to numpy).
#include "replay_io.hpp"

using namespace t3fast;

std::vector<uint64_t> t3fast::g_buffers[3];

extern "C" {

int64_t fr_buffer_size(int which) { return static_cast<int64_t>(g_buffers[which].size()); }
void fr_buffer_copy(int which, uint64_t* out) {
    std::memcpy(out, g_buffers[which].data(), g_buffers[which].size() * sizeof(uint64_t));
}

// Lane sums of two arrays of lane bit patterns (for the test that holds them to numpy).
void fr_lane_sums(int fmt, int64_t n, const uint64_t* a, const uint64_t* b, uint64_t* out) {
    for (int64_t k = 0; k < n; ++k) out[k] = lane_sum(fmt, a[k], b[k]);
}

}  // extern "C"
