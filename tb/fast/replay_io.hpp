// What the trace replays share: reading ports and fields from the record, reporting a
// failure, the status comparison. Field and port orders follow tb/fast/__init__.py.
#pragma once

#include <algorithm>
#include "slice.hpp"

namespace t3fast {

struct Port { int word, shift, width; };
struct Field { int offset, width; };

inline uint64_t get_bits(const uint32_t* row, int word, int bit, int width) {
    // Reads only the words the field spans (the last cycle's row ends where its last port does).
    const int w = word + (bit >> 5), b = bit & 31;
    const uint64_t mask = width >= 64 ? ~0ull : (1ull << width) - 1;
    if (b + width <= 32) return (row[w] >> b) & mask;
    const uint64_t low = row[w] | (static_cast<uint64_t>(row[w + 1]) << 32);
    if (b + width <= 64) return (low >> b) & mask;
    return ((low >> b) | (static_cast<uint64_t>(row[w + 2]) << (64 - b))) & mask;   // here 0 < b
}
inline uint64_t port_value(const uint32_t* row, const Port& p) { return get_bits(row, p.word, p.shift, p.width); }
inline uint64_t sub(const uint32_t* row, const Port& p, const Field& f) {
    return get_bits(row, p.word, p.shift + f.offset, f.width);
}
inline void put_bits(uint32_t* out, int bit, int width, uint64_t value) {
    for (int k = 0; k < width; ++k)
        if ((value >> k) & 1) out[(bit + k) / 32] |= 1u << ((bit + k) % 32);
}

// Sub-fields of the payload layouts, then the status fields (tb/fast/__init__.py FIELDS).
enum FieldIndex {
    F_GEMM_TILE, F_GEMM_ADDR, F_GEMM_OP, F_GEMM_TRACKED, F_GEMM_DATA,
    F_PK_PORT, F_PK_ADDR, F_PK_OP, F_PK_LAST, F_PK_DATA,
    F_ARM_TILE, F_ARM_THRESHOLD, F_ARM_CMD,
    F_PG_INDEX, F_PG_SRC, F_PG_DST, F_PG_BEATS, F_PG_PORT, F_PG_OP,
    F_DR_ADDR, F_DR_WRITE, F_STATUS
};

// Buffers the Python side copies out after a run (defined in replay.cpp).
extern std::vector<uint64_t> g_buffers[3];   // 0: lane sums (a, b, sum); 1: ring snapshots; 2: failure
enum { B_SUMS, B_SNAPSHOTS, B_FAIL };

struct Failure {
    // (cycle, field code, gpu, detail, words, expected words..., got words...)
    int64_t report(int64_t cycle, int code, int gpu, const uint64_t* expected, const uint64_t* got, int words,
                   uint64_t detail = 0) {
        auto& f = g_buffers[B_FAIL];
        f.assign({static_cast<uint64_t>(cycle), static_cast<uint64_t>(code), static_cast<uint64_t>(gpu), detail,
                  static_cast<uint64_t>(words)});
        f.insert(f.end(), expected, expected + words); f.insert(f.end(), got, got + words);
        return -1;
    }
};

// One stream's ports: valid, payload, ready.
struct Stream { Port v, p, r; };

inline Packet read_packet(const uint32_t* row, const Port& p, const Field* f) {
    Packet k;
    k.port = sub(row, p, f[F_PK_PORT]); k.addr = sub(row, p, f[F_PK_ADDR]); k.op = sub(row, p, f[F_PK_OP]);
    k.last = sub(row, p, f[F_PK_LAST]); k.data = Word{sub(row, p, f[F_PK_DATA]), true};
    return k;
}

// The slice inputs every top-level source drives (the ring's ingress and egress readiness excepted).
inline void read_sources(const uint32_t* row, const Stream& arm, const Stream& gemm, const Stream& gread, const Stream& remote,
                  const Stream& program, const Field* f, SliceIn& in) {
    in.arm_valid = port_value(row, arm.v);
    if (in.arm_valid) {
        in.arm_tile = sub(row, arm.p, f[F_ARM_TILE]); in.arm_threshold = sub(row, arm.p, f[F_ARM_THRESHOLD]);
        in.arm_cmd = sub(row, arm.p, f[F_ARM_CMD]);
    }
    in.gemm_valid = port_value(row, gemm.v);
    if (in.gemm_valid) {
        Request& g = in.gemm;
        g.kind = sub(row, gemm.p, f[F_GEMM_OP]) == UPDATE ? UPDATE : STORE; g.dma = 0;
        g.tracked = sub(row, gemm.p, f[F_GEMM_TRACKED]); g.tile = sub(row, gemm.p, f[F_GEMM_TILE]);
        g.addr = sub(row, gemm.p, f[F_GEMM_ADDR]); g.data = Word{sub(row, gemm.p, f[F_GEMM_DATA]), true};
    }
    in.gemm_read_valid = port_value(row, gread.v);
    if (in.gemm_read_valid) in.gemm_read = port_value(row, gread.p);
    in.remote_valid = port_value(row, remote.v);
    if (in.remote_valid) in.remote = read_packet(row, remote.p, f);
    in.program_valid = port_value(row, program.v);
    if (in.program_valid) {
        Command& c = in.program;
        c.index = sub(row, program.p, f[F_PG_INDEX]); c.desc.src = sub(row, program.p, f[F_PG_SRC]);
        c.desc.dst = sub(row, program.p, f[F_PG_DST]); c.desc.beats = sub(row, program.p, f[F_PG_BEATS]);
        c.desc.port = sub(row, program.p, f[F_PG_PORT]); c.desc.op = sub(row, program.p, f[F_PG_OP]);
    }
}

// Compare the status word field by field; on a difference report both words whole.
inline bool status_differs(const uint32_t* row, const Port& st, const Field* f, const uint64_t* status, Failure& fail,
                    int64_t cycle, int code, int gpu) {
    for (int k = 0; k < S_COUNT; ++k) {
        const Field& fld = f[F_STATUS + k];
        uint64_t mask = fld.width >= 64 ? ~0ull : ((1ull << fld.width) - 1);
        if (sub(row, st, fld) != status[k] || (status[k] & ~mask)) {   // a value too wide for its field differs
            int words = (st.width + 31) / 32;
            std::vector<uint32_t> e(words + 1, 0);
            for (int j = 0; j < S_COUNT; ++j) put_bits(e.data(), f[F_STATUS + j].offset, f[F_STATUS + j].width, status[j]);
            std::vector<uint64_t> ew(words), gw(words);
            for (int j = 0; j < words; ++j) {
                ew[j] = e[j];
                gw[j] = get_bits(row, st.word, st.shift + 32 * j, std::min(32, st.width - 32 * j));
            }
            fail.report(cycle, code, gpu, ew.data(), gw.data(), words);
            return true;
        }
    }
    return false;
}

inline SliceParams read_params(const int32_t* a) {
    SliceParams p;
    p.fmt = a[0]; p.lanes = a[1]; p.lane_width = a[2]; p.depth = a[3]; p.entries = a[4]; p.tile_space = a[5];
    p.trigger_depth = a[6]; p.commands = a[7]; p.index_space = a[8]; p.max_beats = a[9]; p.queue_depth = a[10];
    p.addr_width = a[11]; p.tile_beats_log2 = a[12]; p.compute_queue_depth = a[13]; p.wait_width = a[14];
    p.adder_latency = a[15]; p.read_latency = a[16];
    return p;
}

}  // namespace t3fast
