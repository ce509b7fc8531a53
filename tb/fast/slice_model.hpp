// The T3 slice's golden model in C++, for replaying long traces fast.
//
// A translation of the Python reference models (tb/slice/model.py and the block models it
// composes: tracker, DMA command table, arbitrated DMA engine, stream muxes, memory
// arbiter, compute queue, bank) and of tb/link/model.py. Like them it is written from the
// blocks' documented port behaviour, never from rtl/. The Python models stay the reference:
// tests/test_fast_replay.py replays short traces through both and requires the same
// verdict, checks and coverage. Lane sums are proposed here and then checked against
// numpy / ml_dtypes after the run (every sum is logged), so numpy remains the authority on
// floating point.
#pragma once

#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>

namespace t3fast {

constexpr uint64_t MASK32 = 0xffffffffull;
enum Kind : uint8_t { STORE = 0, UPDATE = 1, READ = 2 };
enum Cls : int8_t { NONE = -1, COMPUTE = 0, COMM = 1 };
enum Fmt : int { BINARY16 = 0, BFLOAT16 = 1, BINARY32 = 2 };

// A bank word: its value, or unknown (the Python models' None).
struct Word { uint64_t v = 0; bool known = false; };

// A first-in first-out queue of bounded capacity (deque semantics, no allocation per item).
template <class T> struct Fifo {
    std::vector<T> items; size_t head = 0, count = 0;
    void init(size_t capacity) { items.assign(capacity ? capacity : 1, T{}); head = count = 0; }
    bool empty() const { return count == 0; }
    size_t size() const { return count; }
    T& front() { return items[head]; }
    const T& front() const { return items[head]; }
    void pop() { head = (head + 1) % items.size(); --count; }
    bool push(const T& x) {
        if (count == items.size()) return false;
        items[(head + count) % items.size()] = x; ++count; return true;
    }
};

// ---- floating point: a proposal, checked against numpy after the run ----------------------

inline float bits_f(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline uint32_t f_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

inline float half_to_float(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    if (exp == 0) {
        float f = std::ldexp(static_cast<float>(frac), -24);
        return sign ? -f : f;
    }
    if (exp == 31) return bits_f(sign | 0x7f800000u | (frac << 13));
    return bits_f(sign | ((exp + 112) << 23) | (frac << 13));
}

inline uint32_t float_to_half(float f) {
    uint32_t x = f_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u;                   // NaN
    if (ax >= 0x477ff000u) return sign | 0x7c00u;                  // rounds to infinity
    if (ax < 0x38800000u)                                          // below the smallest normal
        return sign | static_cast<uint32_t>(std::nearbyint(bits_f(ax) * 16777216.0f));
    uint32_t mant = ax & 0x7fffffu, h = (((ax >> 23) - 112) << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return sign | h;
}

inline uint32_t float_to_bf16(float f) {
    uint32_t x = f_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) & 0x8000u) | 0x7fc0u;
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

inline uint64_t lane_sum(int fmt, uint64_t a, uint64_t b) {
    switch (fmt) {
    case BINARY16: return float_to_half(half_to_float(a) + half_to_float(b));
    case BFLOAT16: return float_to_bf16(bits_f(static_cast<uint32_t>(a) << 16) + bits_f(static_cast<uint32_t>(b) << 16));
    default: return f_bits(bits_f(static_cast<uint32_t>(a)) + bits_f(static_cast<uint32_t>(b)));
    }
}

inline bool lane_is_nan(int fmt, uint64_t x) {
    switch (fmt) {
    case BINARY16: return ((x >> 10) & 0x1f) == 0x1f && (x & 0x3ff);
    case BFLOAT16: return ((x >> 7) & 0xff) == 0xff && (x & 0x7f);
    default: return ((x >> 23) & 0xff) == 0xff && (x & 0x7fffff);
    }
}

struct Lanes {
    int fmt = BINARY16, lanes = 4, width = 16;
    std::vector<uint64_t>* log = nullptr;   // (a, b, sum) of every lane sum proposed
    uint64_t mask() const { return width == 64 ? ~0ull : ((1ull << width) - 1); }
    uint64_t add(uint64_t x, uint64_t y) const {
        uint64_t out = 0, m = mask();
        for (int k = 0; k < lanes; ++k) {
            uint64_t a = (x >> (k * width)) & m, b = (y >> (k * width)) & m, s = lane_sum(fmt, a, b) & m;
            if (log) { log->push_back(a); log->push_back(b); log->push_back(s); }
            out |= s << (k * width);
        }
        return out;
    }
    // Equal lane by lane, any NaN matching any NaN (the adder's specification).
    bool same(uint64_t x, uint64_t y) const {
        uint64_t m = mask();
        for (int k = 0; k < lanes; ++k) {
            uint64_t a = (x >> (k * width)) & m, b = (y >> (k * width)) & m;
            if (a != b && !(lane_is_nan(fmt, a) && lane_is_nan(fmt, b))) return false;
        }
        return true;
    }
};

// ---- the blocks ---------------------------------------------------------------------------

struct Packet { uint32_t port = 0, addr = 0, op = 0, last = 0; Word data; };
struct Desc { uint32_t src = 0, dst = 0, beats = 0, port = 0, op = 0; };
struct Command { uint32_t index = 0; Desc desc; };
struct Request { uint8_t kind = READ, dma = 0, tracked = 0; uint32_t tile = 0, addr = 0; Word data; };

struct Tracker {  // tb/tracker/model.py
    int entries = 0, depth = 0, sweep_left = 0;
    std::vector<uint8_t> armed; std::vector<uint32_t> count, threshold, cmd;
    struct Done { bool valid = false; uint32_t tile = 0, cmd = 0; };
    Done in_flight[2];               // oldest first (SPEC_TRIGGER_LATENCY - 1 slots)
    Fifo<Done> queue;
    uint64_t err_unarmed = 0, err_unarmed_tile = 0, err_rearm = 0, err_rearm_tile = 0, err_zero = 0, err_zero_tile = 0;
    uint64_t armed_entries = 0, local_updates = 0, remote_updates = 0, triggers = 0;

    void reset(int entries_, int depth_, int tile_space) {
        entries = entries_; depth = depth_; sweep_left = entries_;
        armed.assign(tile_space, 0); count.assign(tile_space, 0); threshold.assign(tile_space, 0); cmd.assign(tile_space, 0);
        in_flight[0] = in_flight[1] = Done{}; queue.init(depth_ + 1);
        err_unarmed = err_unarmed_tile = err_rearm = err_rearm_tile = err_zero = err_zero_tile = 0;
        armed_entries = local_updates = remote_updates = triggers = 0;
    }
    bool clearing() const { return sweep_left > 0; }
    bool arm_ready() const { return !clearing() && armed_entries + queue.size() < static_cast<uint64_t>(depth); }
    bool update_ready() const { return !clearing(); }
    // One edge, with this cycle's outputs (computed before any state changed) as the Python model memoises them.
    void step(bool arm_valid, uint32_t tile, uint32_t thr, uint32_t dma_cmd, bool update_valid, uint32_t utile,
              bool remote, bool trigger_ready, bool out_arm_ready, bool out_update_ready, bool out_trigger_valid) {
        if (sweep_left) --sweep_left;
        if (out_trigger_valid && trigger_ready) { queue.pop(); triggers = (triggers + 1) & MASK32; }
        Done oldest = in_flight[0];
        in_flight[0] = in_flight[1];
        if (oldest.valid) { queue.push(oldest); --armed_entries; }
        if (arm_valid && out_arm_ready) {
            if (thr == 0) { if (!err_zero) { err_zero = 1; err_zero_tile = tile; } }
            else if (armed[tile]) { if (!err_rearm) { err_rearm = 1; err_rearm_tile = tile; } }
            else { armed[tile] = 1; count[tile] = 0; threshold[tile] = thr; cmd[tile] = dma_cmd; ++armed_entries; }
        }
        Done completion;
        if (update_valid && out_update_ready) {
            if (remote) remote_updates = (remote_updates + 1) & MASK32; else local_updates = (local_updates + 1) & MASK32;
            if (!armed[utile]) { if (!err_unarmed) { err_unarmed = 1; err_unarmed_tile = utile; } }
            else if (++count[utile] == threshold[utile]) { armed[utile] = 0; completion = Done{true, utile, cmd[utile]}; }
        }
        in_flight[1] = completion;
    }
};

struct Table {  // the DMA command table, tb/dma/model.py
    int max_beats = 0, queue_depth = 0;
    std::vector<uint8_t> programmed; std::vector<Desc> descriptors;
    bool in_flight_valid = false; Command in_flight;
    Fifo<Command> queue;
    uint64_t err_unprogrammed = 0, err_unprogrammed_index = 0, err_bad = 0, err_bad_index = 0, triggers = 0, issued = 0;

    void reset(int max_beats_, int queue_depth_, int index_space) {
        max_beats = max_beats_; queue_depth = queue_depth_;
        programmed.assign(index_space, 0); descriptors.assign(index_space, Desc{});
        in_flight_valid = false; queue.init(queue_depth_ + 1);
        err_unprogrammed = err_unprogrammed_index = err_bad = err_bad_index = triggers = issued = 0;
    }
    bool trigger_ready() const { return queue.size() + in_flight_valid < static_cast<size_t>(queue_depth); }
    void step(bool program_valid, const Command& program, bool trigger_valid, uint32_t trigger_cmd, bool issue_ready,
              bool out_trigger_ready, bool out_issue_valid) {
        if (out_issue_valid && issue_ready) { queue.pop(); issued = (issued + 1) & MASK32; }
        if (in_flight_valid) { queue.push(in_flight); in_flight_valid = false; }
        if (program_valid) {
            if (program.desc.beats == 0 || program.desc.beats > static_cast<uint32_t>(max_beats)) {
                if (!err_bad) { err_bad = 1; err_bad_index = program.index; }
            } else { programmed[program.index] = 1; descriptors[program.index] = program.desc; }
        }
        if (trigger_valid && out_trigger_ready) {
            triggers = (triggers + 1) & MASK32;
            if (programmed[trigger_cmd]) { in_flight_valid = true; in_flight = Command{trigger_cmd, descriptors[trigger_cmd]}; }
            else if (!err_unprogrammed) { err_unprogrammed = 1; err_unprogrammed_index = trigger_cmd; }
        }
    }
};

struct Engine {  // the arbitrated-read DMA engine, tb/dma_engine/model.py
    struct Active { uint32_t src = 0, dst = 0, left = 0, port = 0, op = 0, cmd = 0; };
    struct Slot { bool valid = false; Packet packet; };
    int read_latency = 1, buffer_depth = 3; uint32_t addr_mask = 0;
    bool active_valid = false; Active active;
    std::vector<Slot> in_flight; size_t in_flight_head = 0;   // a ring of read_latency slots, oldest at head
    int reads = 0;
    Fifo<Packet> buffer;
    uint64_t commands = 0, beats = 0;

    void reset(int read_latency_, uint32_t addr_mask_) {
        read_latency = read_latency_; buffer_depth = read_latency_ + 2; addr_mask = addr_mask_;
        active_valid = false; in_flight.assign(read_latency_, Slot{}); in_flight_head = 0; reads = 0;
        buffer.init(buffer_depth + 1); commands = beats = 0;
    }
    bool requesting() const { return active_valid && static_cast<int>(buffer.size()) + reads < buffer_depth; }
    bool cmd_ready(bool request, bool mem_ready) const {
        return !active_valid || (request && mem_ready && active.left == 1);
    }
    bool busy() const { return active_valid || reads > 0 || !buffer.empty(); }
    template <class Memory>
    void step(bool cmd_valid, const Command& cmd, bool mem_ready, bool egress_ready, const Memory& memory) {
        bool request = requesting(), ready = cmd_ready(request, mem_ready);
        if (!buffer.empty() && egress_ready) {
            bool last = buffer.front().last;
            buffer.pop(); beats = (beats + 1) & MASK32;
            if (last) commands = (commands + 1) & MASK32;
        }
        Slot arriving = in_flight[in_flight_head];
        if (arriving.valid) { --reads; buffer.push(arriving.packet); }
        Slot read;
        if (request && mem_ready) {
            bool last = active.left == 1;
            read.valid = true;
            read.packet = Packet{active.port, active.dst, active.op, last ? 1u : 0u, memory(active.src)};
            active.src = (active.src + 1) & addr_mask; active.dst = (active.dst + 1) & addr_mask; --active.left;
            if (last) active_valid = false;
        }
        in_flight[in_flight_head] = read;            // the slot just emptied becomes the newest
        in_flight_head = (in_flight_head + 1) % in_flight.size();
        if (read.valid) ++reads;
        if (cmd_valid && ready) {
            active_valid = true;
            active = Active{cmd.desc.src, cmd.desc.dst, cmd.desc.beats, cmd.desc.port, cmd.desc.op, cmd.index};
        }
    }
};

struct Mux {  // tb/stream_mux/model.py; A = 0, B = 1
    int prefer = 0, held = -1;
    void reset() { prefer = 0; held = -1; }
    int select(bool a, bool b) const { return held >= 0 ? held : (a && b) ? prefer : (b ? 1 : 0); }
    void step(bool a, bool b, bool out_ready) {
        if (!(a || b)) { held = -1; return; }
        int sel = select(a, b);
        if (out_ready) { held = -1; prefer = sel == 0 ? 1 : 0; } else held = sel;
    }
};

struct Arbiter {  // system_model/engine/arbiter_policy.py
    uint64_t wait = 0, wait_max = 0, compute_grants = 0, comm_grants = 0, comm_wait = 0, max_comm_wait = 0;
    bool last_compute = false;
    void reset(int wait_width) {
        wait_max = (1ull << wait_width) - 1; wait = 0; last_compute = false;
        compute_grants = comm_grants = comm_wait = max_comm_wait = 0;
    }
    int decide(bool compute_valid, bool comm_valid, uint64_t level, uint64_t threshold, uint64_t limit, int mode) const {
        if (mode == 0) {
            bool starving = comm_valid && wait >= limit;
            if (comm_valid && (starving || (!compute_valid && level < threshold))) return COMM;
        } else if (comm_valid && (!compute_valid || last_compute)) {
            return COMM;
        }
        return compute_valid ? COMPUTE : NONE;
    }
    void step(int winner, bool comm_valid, bool grant_ready) {
        if (winner == COMM && grant_ready) {
            if (wait > max_comm_wait) max_comm_wait = wait;
            wait = 0; comm_grants = (comm_grants + 1) & MASK32; last_compute = false;
        } else if (comm_valid && wait != wait_max) {
            ++wait;
        }
        if (winner == COMPUTE && grant_ready) { compute_grants = (compute_grants + 1) & MASK32; last_compute = true; }
        comm_wait = wait;
    }
};

struct Bank {  // BankModel in tb/slice/model.py
    Lanes adder; int write_latency = 7, hazard_window = 4;
    std::vector<Word> words;
    std::vector<int64_t> pipeline;   // addresses written in the last write_latency edges, newest first (-1: none)
    uint64_t stores = 0, updates = 0;

    void init(const Lanes& lanes, int depth, int adder_latency) {
        adder = lanes; write_latency = adder_latency + 2; hazard_window = adder_latency - 1;
        words.assign(depth, Word{}); pipeline.assign(write_latency, -1);
    }
    void reset() {   // the words in flight become unknown; the rest stay
        for (int64_t a : pipeline) if (a >= 0) words[a].known = false;
        pipeline.assign(write_latency, -1); stores = updates = 0;
    }
    bool ready_for(uint32_t addr, uint8_t kind) const {
        if (kind != UPDATE) return true;
        for (int k = 0; k < hazard_window; ++k) if (pipeline[k] == static_cast<int64_t>(addr)) return false;
        return true;
    }
    void step(bool write, uint32_t addr, uint8_t kind, const Word& beat) {
        if (write) {
            if (kind == UPDATE) {
                Word& w = words[addr];
                if (w.known && beat.known) w.v = adder.add(w.v, beat.v); else w.known = false;
                updates = (updates + 1) & MASK32;
            } else {
                words[addr] = beat; stores = (stores + 1) & MASK32;
            }
        }
        for (int k = write_latency - 1; k > 0; --k) pipeline[k] = pipeline[k - 1];
        pipeline[0] = write ? static_cast<int64_t>(addr) : -1;
    }
};

struct Link {  // tb/link/model.py
    int latency = 1, cycles_per_beat = 1, depth = 2;
    int64_t now = 0, next_accept = 0;
    struct Beat { int64_t accepted = 0; Packet packet; };
    Fifo<Beat> beats;
    void reset(int latency_, int cycles_per_beat_, int depth_) {
        latency = latency_; cycles_per_beat = cycles_per_beat_; depth = depth_;
        now = next_accept = 0; beats.init(depth_ + 1);
    }
    bool input_ready() const { return static_cast<int>(beats.size()) < depth && now >= next_accept; }
    bool output_valid() const { return !beats.empty() && now >= beats.front().accepted + latency; }
    void step(bool input_valid, const Packet& packet, bool output_ready) {
        bool out_valid = output_valid(), in_ready = input_ready();
        if (out_valid && output_ready) beats.pop();
        if (input_valid && in_ready) { beats.push(Beat{now, packet}); next_accept = now + cycles_per_beat; }
        ++now;
    }
};

}  // namespace t3fast
