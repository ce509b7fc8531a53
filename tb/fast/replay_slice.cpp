// The slice's trace replay (tb/slice/trace.py's SliceTrace.replay), against the C++ model.
#include "replay_io.hpp"

using namespace t3fast;

namespace {

// Ports, in tb/fast/__init__.py SLICE_PORTS order (streams: valid, payload, ready).
enum SlicePort {
    SP_RST, SP_MODE, SP_THRESHOLD, SP_LIMIT, SP_DRAM_READY, SP_STATUS,
    SP_ARM, SP_GEMM = SP_ARM + 3, SP_GREAD = SP_GEMM + 3, SP_REMOTE = SP_GREAD + 3, SP_INGRESS = SP_REMOTE + 3,
    SP_PROGRAM = SP_INGRESS + 3, SP_EGRESS = SP_PROGRAM + 3, SP_RD = SP_EGRESS + 3, SP_NOTIFY = SP_RD + 2,
    SP_DREQ = SP_NOTIFY + 2, SP_COUNT = SP_DREQ + 2
};

// Failure codes, in SLICE_CHECKS order.
enum SliceCheck {
    K_GEMM_READY, K_GREAD_READY, K_REMOTE_READY, K_INGRESS_READY, K_ARM_READY, K_PROGRAM_READY, K_RD_VALID,
    K_EGRESS_VALID, K_NOTIFY_VALID, K_DREQ_VALID, K_DREQ_PAYLOAD, K_RD_PAYLOAD, K_EGRESS_PAYLOAD, K_NOTIFY_PAYLOAD,
    K_STATUS
};

// Coverage counters, in SLICE_COVER order.
enum SliceCover {
    C_RESET_ARMED, C_OFFER_HELD, C_READ_HELD, C_READ_RETURNED, C_EGRESS_UNKNOWN, C_EGRESS_BACKPRESSURE,
    C_DMA_STORES, C_NOTIFIED, C_ARM_HELD, C_REMOTE_SENT, C_HAZARD, C_GEMM_HAZARD, C_INGRESS_UPDATE,
    C_GEMM_STORE, C_INGRESS_STORE, C_READ_AFTER_WRITE, C_MCA_COMM, C_ROUND_ROBIN, C_FORWARDED,
    C_MODE_LO, C_MODE_HI, C_THRESHOLD_LO, C_THRESHOLD_HI, C_LIMIT_LO, C_LIMIT_HI
};

Stream stream(const Port* ports, int at) { return Stream{ports[at], ports[at + 1], ports[at + 2]}; }

}  // namespace

extern "C" int64_t fr_slice_replay(const uint32_t* record, int64_t cycles, int64_t words, const int32_t* port_table,
                                   const int32_t* field_table, const int32_t* param_table, const int64_t* ends,
                                   int64_t* result, int64_t* cover) {
    const Port* P = reinterpret_cast<const Port*>(port_table);
    const Field* F = reinterpret_cast<const Field*>(field_table);
    g_buffers[B_SUMS].clear(); g_buffers[B_FAIL].clear();
    Slice model; model.init(read_params(param_table), &g_buffers[B_SUMS]);
    const Lanes& lanes = model.bank.adder;
    const Stream arm = stream(P, SP_ARM), gemm = stream(P, SP_GEMM), gread = stream(P, SP_GREAD);
    const Stream remote = stream(P, SP_REMOTE), ingress = stream(P, SP_INGRESS), program = stream(P, SP_PROGRAM);
    const Stream egress = stream(P, SP_EGRESS);
    Failure fail;
    bool in_reset = true; int64_t checked = 0, checks = 0, last_write = -1; uint64_t commands_done = 0;
    SliceIn in; SliceOut out;
    for (int64_t c = 0; c < cycles; ++c) {
        const uint32_t* row = record + c * words;
        if (port_value(row, P[SP_RST])) {
            if (!in_reset && model.tracker.armed_entries) ++cover[C_RESET_ARMED];
            in_reset = true;
            continue;
        }
        if (in_reset) { model.reset(); in_reset = false; commands_done = 0; last_write = -1; }
        read_sources(row, arm, gemm, gread, remote, program, F, in);
        in.ingress_valid = port_value(row, ingress.v);
        if (in.ingress_valid) in.ingress = read_packet(row, ingress.p, F);
        in.egress_ready = port_value(row, egress.r);
        in.threshold = port_value(row, P[SP_THRESHOLD]); in.starvation_limit = port_value(row, P[SP_LIMIT]);
        in.mode = static_cast<int>(port_value(row, P[SP_MODE])); in.dram_ready = port_value(row, P[SP_DRAM_READY]);
        model.cycle(in, out);

        auto differs = [&](int code, uint64_t got, uint64_t expected) {
            if (got == expected) return false;
            fail.report(c, code, 0, &expected, &got, 1);
            return true;
        };
        ++checks;
        if (differs(K_DREQ_VALID, port_value(row, P[SP_DREQ]), out.request_valid)) return -1;
        if (out.request_valid) {
            ++checks;
            uint64_t want = (static_cast<uint64_t>(out.request_addr) << F[F_DR_ADDR].offset) |
                            (static_cast<uint64_t>(out.request_write) << F[F_DR_WRITE].offset);
            if (differs(K_DREQ_PAYLOAD, port_value(row, P[SP_DREQ + 1]), want)) return -1;
            if (!in.dram_ready && (out.register_free_before || out.issued)) {
                ++cover[C_OFFER_HELD];
                if (!out.request_write) ++cover[C_READ_HELD];
            }
        }
        if (differs(K_GEMM_READY, port_value(row, gemm.r), out.gemm_ready) ||
            differs(K_GREAD_READY, port_value(row, gread.r), out.gemm_read_ready) ||
            differs(K_REMOTE_READY, port_value(row, remote.r), out.remote_ready) ||
            differs(K_INGRESS_READY, port_value(row, ingress.r), out.ingress_ready) ||
            differs(K_ARM_READY, port_value(row, arm.r), out.arm_ready) ||
            differs(K_PROGRAM_READY, port_value(row, program.r), out.program_ready) ||
            differs(K_RD_VALID, port_value(row, P[SP_RD]), out.read_valid) ||
            differs(K_EGRESS_VALID, port_value(row, egress.v), out.egress_valid) ||
            differs(K_NOTIFY_VALID, port_value(row, P[SP_NOTIFY]), out.notify_valid))
            return -1;
        if (out.read_valid) {
            ++cover[C_READ_RETURNED];
            if (out.read_data.known) {
                ++checks;
                uint64_t got = port_value(row, P[SP_RD + 1]);
                if (got != out.read_data.v && !lanes.same(got, out.read_data.v))
                    return fail.report(c, K_RD_PAYLOAD, 0, &out.read_data.v, &got, 1);
            }
        }
        if (out.egress_valid) {
            const Packet& e = out.egress;
            bool same = sub(row, egress.p, F[F_PK_PORT]) == e.port && sub(row, egress.p, F[F_PK_ADDR]) == e.addr &&
                        sub(row, egress.p, F[F_PK_OP]) == e.op && sub(row, egress.p, F[F_PK_LAST]) == e.last;
            if (e.data.known) {
                uint64_t got = sub(row, egress.p, F[F_PK_DATA]);
                same = same && (got == e.data.v || lanes.same(got, e.data.v));
            } else {
                ++cover[C_EGRESS_UNKNOWN];
            }
            if (!same) {
                int n = (egress.p.width + 31) / 32;
                std::vector<uint32_t> w(n + 1, 0);
                put_bits(w.data(), F[F_PK_PORT].offset, F[F_PK_PORT].width, e.port);
                put_bits(w.data(), F[F_PK_ADDR].offset, F[F_PK_ADDR].width, e.addr);
                put_bits(w.data(), F[F_PK_OP].offset, F[F_PK_OP].width, e.op);
                put_bits(w.data(), F[F_PK_LAST].offset, F[F_PK_LAST].width, e.last);
                put_bits(w.data(), F[F_PK_DATA].offset, F[F_PK_DATA].width, e.data.known ? e.data.v : 0);
                std::vector<uint64_t> ew(n), gw(n);
                for (int j = 0; j < n; ++j) {
                    ew[j] = w[j];
                    gw[j] = get_bits(row, egress.p.word, egress.p.shift + 32 * j, std::min(32, egress.p.width - 32 * j));
                }
                return fail.report(c, K_EGRESS_PAYLOAD, e.data.known ? 0 : 1, ew.data(), gw.data(), n);
            }
            ++checks;
            if (!in.egress_ready) ++cover[C_EGRESS_BACKPRESSURE];
            else if (e.op == STORE && e.last) ++cover[C_DMA_STORES];
        }
        if (out.notify_valid) {
            ++checks;
            if (differs(K_NOTIFY_PAYLOAD, port_value(row, P[SP_NOTIFY + 1]), out.notify_tile)) return -1;
            ++cover[C_NOTIFIED];
        }
        if (status_differs(row, P[SP_STATUS], F, out.status, fail, c, K_STATUS, 0)) return -1;
        ++checked;

        // Coverage.
        if (in.arm_valid && !out.arm_ready && !out.status[S_CLEARING]) ++cover[C_ARM_HELD];
        if (in.remote_valid && out.remote_ready) ++cover[C_REMOTE_SENT];
        if (out.bank_hazard != NONE) ++cover[C_HAZARD];
        if (out.bank_hazard == COMPUTE) ++cover[C_GEMM_HAZARD];
        if (out.fired) {
            const Request& r = out.grant;
            const int cls = out.grant_cls;
            if (r.kind != READ && r.tracked) {
                ++cover[cls == COMM ? C_INGRESS_UPDATE : C_GEMM_STORE];
                if (cls == COMM && r.kind == STORE) ++cover[C_INGRESS_STORE];
            }
            if (r.kind == READ && static_cast<int64_t>(r.addr) == last_write && !r.dma) ++cover[C_READ_AFTER_WRITE];
            last_write = r.kind != READ ? static_cast<int64_t>(r.addr) : -1;
            ++cover[in.mode == 0 ? C_MODE_LO : C_MODE_HI];
            if (cls == COMM && in.mode == 0 && r.kind != READ) {
                ++cover[C_MCA_COMM];
                cover[C_THRESHOLD_LO] += static_cast<int64_t>(in.threshold) == ends[0];
                cover[C_THRESHOLD_HI] += static_cast<int64_t>(in.threshold) == ends[1];
                cover[C_LIMIT_LO] += static_cast<int64_t>(in.starvation_limit) == ends[2];
                cover[C_LIMIT_HI] += static_cast<int64_t>(in.starvation_limit) == ends[3];
            }
            if (in.mode == 1) ++cover[C_ROUND_ROBIN];
        }
        if (model.engine.commands != commands_done) { ++cover[C_FORWARDED]; commands_done = model.engine.commands; }
    }
    result[0] = checked; result[1] = checks;
    return 0;
}
