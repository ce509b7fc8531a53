// One slice model stepped from Python, cycle by cycle, for the differential test that holds
// it to tb/slice/model.py on random inputs, corners the recorded traces rarely reach
// (tests/test_fast_replay.py). Input and output orders follow tb/fast/step.py.
#include "replay_io.hpp"

using namespace t3fast;

namespace {
struct Handle { Slice slice; std::vector<uint64_t> sums; };
}

extern "C" {

void* fr_slice_new(const int32_t* params) {
    Handle* h = new Handle;
    h->slice.init(read_params(params), &h->sums);
    return h;
}

void fr_slice_free(void* handle) { delete static_cast<Handle*>(handle); }

void fr_slice_reset(void* handle) { static_cast<Handle*>(handle)->slice.reset(); }

int64_t fr_slice_sums(void* handle, uint64_t* out) {   // the lane sums proposed so far (a, b, sum), then forgotten
    auto& sums = static_cast<Handle*>(handle)->sums;
    const int64_t n = static_cast<int64_t>(sums.size());
    if (out) { std::memcpy(out, sums.data(), sums.size() * sizeof(uint64_t)); sums.clear(); }
    return n;
}

void fr_slice_cycle(void* handle, const int64_t* a, int64_t* o) {
    Slice& s = static_cast<Handle*>(handle)->slice;
    SliceIn in;
    in.gemm_valid = a[0];
    in.gemm.kind = a[1] == UPDATE ? UPDATE : STORE; in.gemm.tracked = a[2]; in.gemm.tile = a[3]; in.gemm.addr = a[4];
    in.gemm.data = Word{static_cast<uint64_t>(a[5]), true};
    in.gemm_read_valid = a[6]; in.gemm_read = a[7];
    in.remote_valid = a[8];
    in.remote = Packet{static_cast<uint32_t>(a[9]), static_cast<uint32_t>(a[10]), static_cast<uint32_t>(a[11]),
                       static_cast<uint32_t>(a[12]), Word{static_cast<uint64_t>(a[13]), true}};
    in.ingress_valid = a[14];
    in.ingress = Packet{static_cast<uint32_t>(a[15]), static_cast<uint32_t>(a[16]), static_cast<uint32_t>(a[17]),
                        static_cast<uint32_t>(a[18]), Word{static_cast<uint64_t>(a[19]), a[20] != 0}};
    in.arm_valid = a[21]; in.arm_tile = a[22]; in.arm_threshold = a[23]; in.arm_cmd = a[24];
    in.program_valid = a[25];
    in.program = Command{static_cast<uint32_t>(a[26]), Desc{static_cast<uint32_t>(a[27]), static_cast<uint32_t>(a[28]),
                         static_cast<uint32_t>(a[29]), static_cast<uint32_t>(a[30]), static_cast<uint32_t>(a[31])}};
    in.egress_ready = a[32]; in.threshold = a[33]; in.starvation_limit = a[34]; in.mode = static_cast<int>(a[35]);
    in.dram_ready = a[36];
    SliceOut out;
    s.cycle(in, out);
    const int64_t values[] = {
        out.gemm_ready, out.gemm_read_ready, out.read_valid, out.read_data.known,
        static_cast<int64_t>(out.read_data.v), out.remote_ready, out.ingress_ready, out.egress_valid,
        out.egress.port, out.egress.addr, out.egress.op, out.egress.last, out.egress.data.known,
        static_cast<int64_t>(out.egress.data.v), out.arm_ready, out.program_ready, out.notify_valid,
        out.notify_tile, out.request_valid, out.request_addr, out.request_write};
    const int count = sizeof(values) / sizeof(values[0]);
    for (int k = 0; k < count; ++k) o[k] = values[k];
    for (int k = 0; k < S_COUNT; ++k) o[count + k] = static_cast<int64_t>(out.status[k]);
}

}  // extern "C"
