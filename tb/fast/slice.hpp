// The composed slice: SliceModel.cycle of tb/slice/model.py, in C++ (see slice_model.hpp).
#pragma once

#include "slice_model.hpp"

namespace t3fast {

struct SliceParams {
    int fmt = BINARY16, lanes = 4, lane_width = 16, depth = 256, entries = 64, tile_space = 64, trigger_depth = 8;
    int commands = 16, index_space = 16, max_beats = 16, queue_depth = 4, addr_width = 8, tile_beats_log2 = 2;
    int compute_queue_depth = 4, wait_width = 16, adder_latency = 5, read_latency = 7;
};

struct SliceIn {
    bool gemm_valid = false, gemm_read_valid = false, remote_valid = false, ingress_valid = false;
    bool arm_valid = false, program_valid = false;
    Request gemm;               // kind, tracked, tile, addr, data of the GEMM's write
    uint32_t gemm_read = 0;
    Packet remote, ingress;
    uint32_t arm_tile = 0, arm_threshold = 0, arm_cmd = 0;
    Command program;
    bool egress_ready = false, dram_ready = true;
    uint64_t threshold = 0, starvation_limit = 0; int mode = 0;
};

// The status word's fields, in tb/fast/__init__.py's STATUS_FIELDS order.
enum StatusField {
    S_CLEARING, S_ERR_UNARMED, S_ERR_UNARMED_TILE, S_ERR_REARM, S_ERR_REARM_TILE, S_ERR_ZERO, S_ERR_ZERO_TILE,
    S_ARMED_ENTRIES, S_LOCAL_UPDATES, S_REMOTE_UPDATES, S_TRACKER_TRIGGERS,
    S_ERR_UNPROGRAMMED, S_ERR_UNPROGRAMMED_INDEX, S_ERR_BAD, S_ERR_BAD_INDEX, S_TABLE_TRIGGERS, S_ISSUED,
    S_ERR_OVERFLOW, S_BUSY, S_COMMANDS, S_BEATS, S_STORES, S_UPDATES,
    S_COMPUTE_GRANTS, S_COMM_GRANTS, S_COMM_WAIT, S_MAX_COMM_WAIT, S_INGRESS_BEATS, S_EGRESS_BEATS, S_NOTIFIES,
    S_COUNT
};

struct SliceOut {
    bool gemm_ready, gemm_read_ready, read_valid, remote_ready, ingress_ready, egress_valid, arm_ready, program_ready;
    bool notify_valid; uint32_t notify_tile;
    Word read_data; Packet egress;
    uint64_t status[S_COUNT];
    bool request_valid; uint32_t request_addr; bool request_write;
    bool fired; int grant_cls; Request grant;         // the request granted at this edge
    int bank_hazard;                                   // class of the held update waiting for a sum (-1: none)
    bool issued;                                       // the register's request went to the bank
    bool register_free_before;                         // nothing was held at the cycle's start
};

struct Slice {
    SliceParams p;
    Tracker tracker; Table table; Engine engine; Arbiter arbiter; Mux compute_mux, comm_mux, egress_mux;
    Fifo<Request> compute_queue; Bank bank;
    std::vector<Word> read_returns; size_t rr_head = 0;   // a ring, oldest at rr_head
    std::vector<uint8_t> read_valid;
    uint64_t ingress_beats = 0, egress_beats = 0, notifies = 0;
    bool held_valid = false; int held_cls = NONE; Request held;

    void init(const SliceParams& params, std::vector<uint64_t>* sums) {
        p = params;
        Lanes lanes{p.fmt, p.lanes, p.lane_width, sums};
        bank.init(lanes, p.depth, p.adder_latency);
        reset();
    }
    void reset() {   // the registers; the bank keeps its words (those in flight become unknown)
        bank.reset();
        tracker.reset(p.entries, p.trigger_depth, p.tile_space);
        table.reset(p.max_beats, p.queue_depth, p.index_space);
        engine.reset(p.read_latency, (1u << p.addr_width) - 1);
        arbiter.reset(p.wait_width);
        compute_mux.reset(); comm_mux.reset(); egress_mux.reset();
        compute_queue.init(p.compute_queue_depth + 1);
        read_returns.assign(p.read_latency, Word{}); read_valid.assign(p.read_latency, 0); rr_head = 0;
        ingress_beats = egress_beats = notifies = 0;
        held_valid = false; held_cls = NONE;
    }
    Request ingress_request(const Packet& pk) const {
        Request r; r.kind = pk.op == UPDATE ? UPDATE : STORE; r.dma = 0; r.tracked = 1;
        r.tile = (pk.addr >> p.tile_beats_log2) & static_cast<uint32_t>(p.entries - 1); r.addr = pk.addr; r.data = pk.data;
        return r;
    }

    void cycle(const SliceIn& in, SliceOut& out) {
        // This cycle's block outputs, before any state changes.
        const bool trk_arm_ready = tracker.arm_ready(), trk_update_ready = tracker.update_ready();
        const bool trig_valid = !tracker.queue.empty();
        const Tracker::Done trig = trig_valid ? tracker.queue.front() : Tracker::Done{};
        const bool tbl_trigger_ready = table.trigger_ready(), issue_valid = !table.queue.empty();
        const Command issue = issue_valid ? table.queue.front() : Command{};
        const bool want = engine.requesting();
        uint64_t* s = out.status;
        s[S_CLEARING] = tracker.clearing(); s[S_ERR_UNARMED] = tracker.err_unarmed;
        s[S_ERR_UNARMED_TILE] = tracker.err_unarmed_tile; s[S_ERR_REARM] = tracker.err_rearm;
        s[S_ERR_REARM_TILE] = tracker.err_rearm_tile; s[S_ERR_ZERO] = tracker.err_zero;
        s[S_ERR_ZERO_TILE] = tracker.err_zero_tile; s[S_ARMED_ENTRIES] = tracker.armed_entries;
        s[S_LOCAL_UPDATES] = tracker.local_updates; s[S_REMOTE_UPDATES] = tracker.remote_updates;
        s[S_TRACKER_TRIGGERS] = tracker.triggers;
        s[S_ERR_UNPROGRAMMED] = table.err_unprogrammed; s[S_ERR_UNPROGRAMMED_INDEX] = table.err_unprogrammed_index;
        s[S_ERR_BAD] = table.err_bad; s[S_ERR_BAD_INDEX] = table.err_bad_index;
        s[S_TABLE_TRIGGERS] = table.triggers; s[S_ISSUED] = table.issued;
        s[S_ERR_OVERFLOW] = 0; s[S_BUSY] = engine.busy(); s[S_COMMANDS] = engine.commands; s[S_BEATS] = engine.beats;
        s[S_STORES] = bank.stores; s[S_UPDATES] = bank.updates;
        s[S_COMPUTE_GRANTS] = arbiter.compute_grants; s[S_COMM_GRANTS] = arbiter.comm_grants;
        s[S_COMM_WAIT] = arbiter.comm_wait; s[S_MAX_COMM_WAIT] = arbiter.max_comm_wait;
        s[S_INGRESS_BEATS] = ingress_beats; s[S_EGRESS_BEATS] = egress_beats; s[S_NOTIFIES] = notifies;
        out.read_valid = read_valid[rr_head]; out.read_data = read_returns[rr_head];

        // Compute class: gemm (a) and gemm_read (b) merge into the compute queue.
        const bool cq_w_rdy = compute_queue.size() < static_cast<size_t>(p.compute_queue_depth);
        const int csel = compute_mux.select(in.gemm_valid, in.gemm_read_valid);
        const bool cq_write = (in.gemm_valid || in.gemm_read_valid) && cq_w_rdy;
        Request compute_in;
        if (csel == 0) compute_in = in.gemm;
        else { compute_in.kind = READ; compute_in.addr = in.gemm_read; }

        // Communication class: ingress (a) and the DMA engine's reads (b).
        const bool comm_valid = in.ingress_valid || want;
        const int comm_sel = comm_mux.select(in.ingress_valid, want);
        Request comm_req;
        if (comm_valid) {
            if (comm_sel == 0) comm_req = ingress_request(in.ingress);
            else { comm_req.kind = READ; comm_req.dma = 1; comm_req.addr = engine.active.src; }
        }

        // The issue register and the bank's refusals.
        const bool held_write = held_valid && held.kind != READ;
        const bool counted = held_write && held.tracked;
        const bool tracker_ok = !counted || trk_update_ready;
        const bool hazard = held_write && !bank.ready_for(held.addr, held.kind);
        const bool issue_now = held_valid && tracker_ok && !hazard;
        const bool free = !held_valid || issue_now;
        const bool grant_ready = free && in.dram_ready;
        out.register_free_before = !held_valid;

        const bool comm_visible = comm_valid && !(held_valid && held_cls == COMM && hazard);
        const int winner = arbiter.decide(!compute_queue.empty(), comm_visible, compute_queue.size(), in.threshold,
                                          in.starvation_limit, in.mode);
        Request request; bool has_request = false;
        if (winner == COMPUTE) { request = compute_queue.front(); has_request = true; }
        else if (winner == COMM) { request = comm_req; has_request = true; }
        const bool fire = has_request && grant_ready;
        const bool compute_taken = fire && winner == COMPUTE, comm_taken = fire && winner == COMM;
        const bool ingress_ready = comm_sel == 0 && comm_taken, mem_ready = comm_sel == 1 && comm_taken;

        // Triggers: notify-only commands pulse notify; the others go to the command table.
        const bool is_notify = trig_valid && trig.cmd == static_cast<uint32_t>(p.commands - 1);
        const bool table_trigger = trig_valid && !is_notify;
        const bool trigger_ready = is_notify || tbl_trigger_ready;

        // Egress: the engine's packets (a) and the GEMM's remote stores (b).
        const bool eng_cmd_ready = engine.cmd_ready(want, mem_ready);
        const bool eng_egress_valid = !engine.buffer.empty();
        const int esel = egress_mux.select(eng_egress_valid, in.remote_valid);
        out.egress_valid = eng_egress_valid || in.remote_valid;
        if (out.egress_valid) out.egress = esel == 0 ? engine.buffer.front() : in.remote;

        out.gemm_ready = csel == 0 && cq_w_rdy; out.gemm_read_ready = csel == 1 && cq_w_rdy;
        out.remote_ready = esel == 1 && in.egress_ready; out.ingress_ready = ingress_ready;
        out.arm_ready = trk_arm_ready; out.program_ready = true;
        out.notify_valid = is_notify; out.notify_tile = trig.tile;
        out.fired = fire; out.grant_cls = winner; out.grant = request;
        out.request_valid = has_request; out.request_addr = request.addr; out.request_write = request.kind != READ;
        out.bank_hazard = held_write && tracker_ok && !issue_now ? held_cls : NONE;
        out.issued = issue_now;

        // -- the edge ----------------------------------------------------------------------
        bool update = false; bool update_remote = false; uint32_t update_tile = 0;
        if (issue_now) {
            bank.step(held_write, held.addr, held.kind, held.data);
            if (counted) { update = true; update_tile = held.tile; update_remote = held_cls == COMM; }
        } else {
            bank.step(false, 0, STORE, Word{});
        }
        // A read granted now returns read_latency cycles later; the ring's oldest slot becomes the newest.
        read_valid[rr_head] = compute_taken && request.kind == READ;
        read_returns[rr_head] = read_valid[rr_head] ? bank.words[request.addr] : Word{};
        rr_head = (rr_head + 1) % read_returns.size();
        tracker.step(in.arm_valid, in.arm_tile, in.arm_threshold, in.arm_cmd, update, update_tile, update_remote,
                     trigger_ready, trk_arm_ready, trk_update_ready, trig_valid);
        table.step(in.program_valid, in.program, table_trigger, trig.cmd, eng_cmd_ready, tbl_trigger_ready, issue_valid);
        engine.step(issue_valid, issue, mem_ready, in.egress_ready && esel == 0,
                    [this](uint32_t addr) { return bank.words[addr]; });
        if (free) {
            held_valid = fire;
            if (fire) { held_cls = winner; held = request; } else held_cls = NONE;
        }
        arbiter.step(winner, comm_visible, grant_ready);
        compute_mux.step(in.gemm_valid, in.gemm_read_valid, cq_w_rdy);
        comm_mux.step(in.ingress_valid, want, comm_taken);
        egress_mux.step(eng_egress_valid, in.remote_valid, in.egress_ready);
        if (compute_taken) compute_queue.pop();
        if (cq_write) compute_queue.push(compute_in);
        if (in.ingress_valid && ingress_ready) ingress_beats = (ingress_beats + 1) & MASK32;
        if (out.egress_valid && in.egress_ready) egress_beats = (egress_beats + 1) & MASK32;
        if (is_notify) notifies = (notifies + 1) & MASK32;
    }
};

}  // namespace t3fast
