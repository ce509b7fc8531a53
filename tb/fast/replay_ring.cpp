// The ring's trace replay (tb/ring/trace.py's RingTrace.replay), against the C++ model:
// one slice and one link per GPU, wired as rtl/ring.py wires them. A finished round's
// read-back from the RTL is checked here against numpy's values (passed in); the banks
// at every segment's end are recorded for the Python side to hold to numpy too.
#include <deque>

#include "replay_io.hpp"

using namespace t3fast;

namespace {

// Per GPU, in tb/fast/__init__.py RING_GPU_PORTS order, after the four shared ports.
enum RingPort { RP_RST, RP_MODE, RP_THRESHOLD, RP_LIMIT, RP_SHARED };
enum RingGpuPort {
    RG_ARM, RG_GEMM = RG_ARM + 3, RG_GREAD = RG_GEMM + 3, RG_REMOTE = RG_GREAD + 3, RG_PROGRAM = RG_REMOTE + 3,
    RG_RD = RG_PROGRAM + 3, RG_NOTIFY = RG_RD + 2, RG_STATUS = RG_NOTIFY + 2, RG_COUNT
};
// Failure codes, in RING_CHECKS order (the ready checks in PORTS order).
enum RingCheck {
    Q_ARM_READY, Q_GEMM_READY, Q_GREAD_READY, Q_REMOTE_READY, Q_PROGRAM_READY, Q_RD_VALID, Q_NOTIFY_VALID,
    Q_RD_PAYLOAD, Q_NOTIFY_PAYLOAD, Q_STATUS, Q_READBACK, Q_BANK
};
// Coverage counters, in RING_COVER order; the stage counters follow, one per stage 0 .. gpus - 1.
enum RingCover { R_BEAT_WAITING, R_READ_RETURNED, R_NOTIFIED, R_FORWARDED, R_READBACK, R_STAGE0 };

Stream stream(const Port* ports, int at) { return Stream{ports[at], ports[at + 1], ports[at + 2]}; }

void snapshot(int64_t segment, const std::vector<Slice>& slices, const std::vector<int64_t>& notified) {
    auto& b = g_buffers[B_SNAPSHOTS];
    b.push_back(static_cast<uint64_t>(segment));
    for (int64_t n : notified) b.push_back(static_cast<uint64_t>(n));
    for (const Slice& s : slices)
        for (const Word& w : s.bank.words) { b.push_back(w.v); b.push_back(w.known); }
}

}  // namespace

// ``rounds``: per segment (as many as planned), the tiles each GPU must notify for the round
// to finish, then per GPU the words of its chunk the next segment reads back first and
// their numpy values (``expected``: rounds x gpus x depth, indexed by address).
extern "C" int64_t fr_ring_replay(const uint32_t* record, int64_t cycles, int64_t words, const int32_t* port_table,
                                  const int32_t* field_table, const int32_t* param_table, int32_t gpus,
                                  const int32_t* link_params, int32_t chunk_words, int32_t planned,
                                  const int32_t* rounds, const uint64_t* expected, int64_t* result, int64_t* cover) {
    const Port* P = reinterpret_cast<const Port*>(port_table);
    const Field* F = reinterpret_cast<const Field*>(field_table);
    for (int k : {B_SUMS, B_SNAPSHOTS, B_FAIL}) g_buffers[k].clear();
    const int n = gpus;
    std::vector<Slice> slices(n);
    for (Slice& s : slices) s.init(read_params(param_table), &g_buffers[B_SUMS]);
    std::vector<Link> links(n);
    auto reset_links = [&] { for (Link& l : links) l.reset(link_params[0], link_params[1], link_params[2]); };
    reset_links();
    const Lanes& lanes = slices[0].bank.adder;
    std::vector<const Port*> G(n);
    for (int g = 0; g < n; ++g) G[g] = P + RP_SHARED + g * RG_COUNT;
    std::vector<std::deque<uint32_t>> pending(n);
    std::vector<int64_t> notified(n, 0);
    std::vector<SliceIn> in(n); std::vector<SliceOut> out(n);
    std::vector<uint8_t> link_ready(n), link_valid(n); std::vector<Packet> link_head(n);
    Failure fail;
    const int depth = slices[0].p.depth;
    std::vector<int64_t> readback_left(n, 0);
    int64_t readback_round = -1;
    bool in_reset = true; int64_t checked = 0, checks = 0, segment = -1;
    for (int64_t c = 0; c < cycles; ++c) {
        const uint32_t* row = record + c * words;
        if (port_value(row, P[RP_RST])) {
            if (!in_reset) {
                bool waiting = false;
                for (const Link& l : links) waiting = waiting || l.output_valid();
                cover[R_BEAT_WAITING] += waiting;
                snapshot(segment, slices, notified);
                for (auto& q : pending) q.clear();
                // A finished round is read back first in the next segment (tb/ring/trace.py).
                const int32_t* r = rounds + segment * (1 + n);
                bool finished = segment < planned;
                for (int g = 0; finished && g < n; ++g) finished = notified[g] >= r[0];
                readback_round = finished ? segment : -1;
                for (int g = 0; g < n; ++g) readback_left[g] = finished ? r[1 + g] : 0;
                // A finished round's chunks in the model's banks are numpy's reduce-scatter
                // (the Python replay checks it here, at the reset, before going on).
                for (int g = 0; finished && g < n; ++g) {
                    const uint64_t* want = expected + (segment * n + g) * static_cast<int64_t>(depth);
                    const int64_t base = static_cast<int64_t>(g) * r[1 + g];
                    uint64_t bad = 0, first = 0;
                    for (int64_t i = 0; i < r[1 + g]; ++i) {
                        const Word& w = slices[g].bank.words[base + i];
                        if (!w.known || (w.v != want[base + i] && !lanes.same(w.v, want[base + i]))) {
                            if (!bad++) first = static_cast<uint64_t>(i);
                        }
                    }
                    if (bad) return fail.report(c, Q_BANK, g, &first, &bad, 1, static_cast<uint64_t>(segment));
                }
            }
            in_reset = true;
            continue;
        }
        if (in_reset) {
            for (Slice& s : slices) s.reset();
            reset_links();
            in_reset = false; ++segment;
            std::fill(notified.begin(), notified.end(), 0);
        }
        for (int g = 0; g < n; ++g) {
            link_ready[g] = links[g].input_ready(); link_valid[g] = links[g].output_valid();
            if (link_valid[g]) link_head[g] = links[g].beats.front().packet;
        }
        const uint64_t threshold = port_value(row, P[RP_THRESHOLD]), limit = port_value(row, P[RP_LIMIT]);
        const int mode = static_cast<int>(port_value(row, P[RP_MODE]));
        for (int g = 0; g < n; ++g) {
            const Port* Q = G[g];
            SliceIn& i = in[g];
            read_sources(row, stream(Q, RG_ARM), stream(Q, RG_GEMM), stream(Q, RG_GREAD), stream(Q, RG_REMOTE),
                         stream(Q, RG_PROGRAM), F, i);
            const int before = (g + n - 1) % n;
            i.ingress_valid = link_valid[before];
            if (i.ingress_valid) i.ingress = link_head[before];
            i.egress_ready = link_ready[g]; i.threshold = threshold; i.starvation_limit = limit; i.mode = mode;
            i.dram_ready = true;
            slices[g].cycle(i, out[g]);
        }
        auto differs = [&](int code, int g, uint64_t got, uint64_t expected) {
            if (got == expected) return false;
            fail.report(c, code, g, &expected, &got, 1);
            return true;
        };
        for (int g = 0; g < n; ++g) {
            const Port* Q = G[g]; const SliceOut& o = out[g];
            if (differs(Q_ARM_READY, g, port_value(row, Q[RG_ARM + 2]), o.arm_ready) ||
                differs(Q_GEMM_READY, g, port_value(row, Q[RG_GEMM + 2]), o.gemm_ready) ||
                differs(Q_GREAD_READY, g, port_value(row, Q[RG_GREAD + 2]), o.gemm_read_ready) ||
                differs(Q_REMOTE_READY, g, port_value(row, Q[RG_REMOTE + 2]), o.remote_ready) ||
                differs(Q_PROGRAM_READY, g, port_value(row, Q[RG_PROGRAM + 2]), o.program_ready))
                return -1;
        }
        for (int g = 0; g < n; ++g) {
            const Port* Q = G[g]; const SliceOut& o = out[g];
            if (differs(Q_RD_VALID, g, port_value(row, Q[RG_RD]), o.read_valid) ||
                differs(Q_NOTIFY_VALID, g, port_value(row, Q[RG_NOTIFY]), o.notify_valid))
                return -1;
        }
        for (int g = 0; g < n; ++g) {
            const Port* Q = G[g]; const SliceOut& o = out[g];
            if (o.read_valid) {
                ++cover[R_READ_RETURNED];
                const uint64_t got = port_value(row, Q[RG_RD + 1]);
                if (pending[g].empty()) return fail.report(c, Q_RD_VALID, g, &got, &got, 1);
                const uint32_t addr = pending[g].front();
                pending[g].pop_front();
                if (readback_left[g]) {   // the last round's reduce-scatter, from numpy
                    --readback_left[g];
                    const uint64_t want = expected[(readback_round * n + g) * static_cast<int64_t>(depth) + addr];
                    if (got != want && !lanes.same(got, want))
                        return fail.report(c, Q_READBACK, g, &want, &got, 1, addr);
                    ++cover[R_READBACK];
                }
                if (o.read_data.known && got != o.read_data.v && !lanes.same(got, o.read_data.v))
                    return fail.report(c, Q_RD_PAYLOAD, g, &o.read_data.v, &got, 1);
            }
            if (o.notify_valid) {
                ++checks;
                if (differs(Q_NOTIFY_PAYLOAD, g, port_value(row, Q[RG_NOTIFY + 1]), o.notify_tile)) return -1;
                ++notified[g]; ++cover[R_NOTIFIED];
            }
            if (status_differs(row, Q[RG_STATUS], F, o.status, fail, c, Q_STATUS, g)) return -1;
        }
        for (int g = 0; g < n; ++g) {
            const Port* Q = G[g];
            if (in[g].gemm_read_valid && port_value(row, Q[RG_GREAD + 2])) pending[g].push_back(in[g].gemm_read);
        }
        for (int g = 0; g < n; ++g) {
            const bool taken = out[(g + 1) % n].ingress_ready;
            links[g].step(out[g].egress_valid, out[g].egress, taken);
            if (taken && link_valid[g]) {
                const int64_t stage = ((g - static_cast<int64_t>(link_head[g].addr / chunk_words)) % n + n) % n;
                ++cover[R_STAGE0 + stage];
                if (link_head[g].last) ++cover[R_FORWARDED];
            }
        }
        ++checked;
    }
    snapshot(segment, slices, notified);   // the run's end, as the Python replay ends
    size_t most = 0;
    for (auto& q : pending) most = std::max(most, q.size());
    result[0] = checked; result[1] = checks; result[2] = static_cast<int64_t>(most);
    return 0;
}
