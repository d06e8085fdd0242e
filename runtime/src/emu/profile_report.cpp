// The profiler's reports: text and JSON (profile.h; docs/user-guide.md describes both).
#include "profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace wave::emu::profile {
namespace {

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    return {};
  if (size_t(n) < sizeof buf)
    return std::string(buf, size_t(n));
  std::string out(size_t(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(out.data(), out.size(), fmt, ap);
  va_end(ap);
  out.resize(size_t(n));
  return out;
}

std::string location(const Site &s) {
  if (s.file.empty())
    return format("instruction %u", s.pc);
  return format("%s:%u:%u", s.file.c_str(), s.line, s.col);
}

// The sites of one kernel grouped by source location, op, space and width: the instructions one
// `.wave` operation became (a copy per unrolled element or operand) add up. In order of the first
// instruction; `instructions` counts them.
struct Group {
  Site site;
  uint32_t instructions = 0;
};
std::vector<Group> groupSites(const std::vector<Site> &sites) {
  std::vector<Group> out;
  for (const Site &s : sites) {
    auto same = [&](const Group &g) {
      const Site &t = g.site;
      return !s.file.empty() && t.file == s.file && t.line == s.line && t.col == s.col &&
             t.op == s.op && t.shared == s.shared && t.width == s.width;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) {
      out.push_back({s, 1});
      continue;
    }
    ++it->instructions;
    it->site.executions += s.executions;
    it->site.laneAccesses += s.laneAccesses;
    it->site.global.add(s.global);
    it->site.lds.add(s.lds);
  }
  return out;
}

std::string limitText(uint32_t v) { return v == UINT32_MAX ? "no limit" : std::to_string(v); }

// Per wave: instructions each thread executed, averaged over the threads (the count each wave
// issues when its lanes run together).
double perWave(const KernelProfile &k, unsigned c) {
  return k.threads ? double(k.threadInsts[c]) / double(k.threads) : 0.0;
}

std::string occupancyText(const KernelProfile &k) {
  const uint32_t threads = k.block[0] * k.block[1] * k.block[2];
  const Occupancy o = occupancy(k.target, k.waveSize, threads, k.ldsBytes, k.registers);
  if (!o.knownTarget)
    return "  occupancy: unknown for target " + k.target + "\n";
  std::string regs = "registers unknown (not counted)";
  if (k.registers.vgprs >= 0)
    regs = format("%d VGPRs, %d AGPRs, %d SGPRs: %s workgroups", k.registers.vgprs,
                  std::max(k.registers.agprs, 0), std::max(k.registers.sgprs, 0),
                  limitText(o.byRegisters).c_str());
  else if (k.registers.regs >= 0)
    regs = format("%d registers per thread: %s workgroups", k.registers.regs,
                  limitText(o.byRegisters).c_str());
  return format("  occupancy: %u of %u waves per %s (%.1f%%), %u workgroups of %u waves, "
                "limited by %s\n"
                "    limits: waves %s workgroups; LDS %u B per workgroup of %u B per %s: %s "
                "workgroups; %s\n",
                o.waves(), o.maxWaves, o.unit, 100.0 * o.fraction(), o.blocks, o.wavesPerBlock,
                o.limitedBy, limitText(o.byWaves).c_str(), k.ldsBytes, o.ldsPerUnit, o.unit,
                limitText(o.byLds).c_str(), regs.c_str());
}

std::string siteText(const Group &g) {
  const Site &s = g.site;
  std::string out = format("    %-24s %-6s %-12s %3u B/lane x%-3u %9" PRIu64 " execs ",
                           location(s).c_str(), s.shared ? "shared" : "global", s.op.c_str(),
                           s.width, g.instructions, s.executions);
  if (s.shared)
    return out + format("%10" PRIu64 " B  %8" PRIu64 " phases %8" PRIu64
                        " wavefronts %8" PRIu64 " conflicts\n",
                        s.lds.requested, s.lds.phases, s.lds.wavefronts, s.lds.conflicts());
  return out + format("%10" PRIu64 " B  %8" PRIu64 " sectors %7" PRIu64 " seg64 %7" PRIu64
                      " seg128  eff %5.1f%%\n",
                      s.global.requested, s.global.sectors, s.global.segments64,
                      s.global.segments128, 100.0 * s.global.efficiency());
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\')
      out += '\\', out += ch;
    else if (c < 0x20)
      out += format("\\u%04x", c);
    else
      out += ch;
  }
  return out + "\"";
}

std::string jsonLimit(uint32_t v) { return v == UINT32_MAX ? "null" : std::to_string(v); }

std::string globalJson(const GlobalCost &g) {
  return format("{\"requested_bytes\": %" PRIu64 ", \"unique_bytes\": %" PRIu64
                ", \"sectors\": %" PRIu64 ", \"moved_bytes\": %" PRIu64
                ", \"segments_64\": %" PRIu64 ", \"segments_128\": %" PRIu64
                ", \"efficiency\": %.6f}",
                g.requested, g.unique, g.sectors, g.sectors * kSectorBytes, g.segments64,
                g.segments128, g.efficiency());
}

std::string sharedJson(const SharedCost &s) {
  return format("{\"requested_bytes\": %" PRIu64 ", \"phases\": %" PRIu64
                ", \"wavefronts\": %" PRIu64 ", \"bank_conflicts\": %" PRIu64 "}",
                s.requested, s.phases, s.wavefronts, s.conflicts());
}

std::string occupancyJson(const KernelProfile &k) {
  const uint32_t threads = k.block[0] * k.block[1] * k.block[2];
  const Occupancy o = occupancy(k.target, k.waveSize, threads, k.ldsBytes, k.registers);
  if (!o.knownTarget)
    return "null";
  auto reg = [](int v) { return v < 0 ? std::string("null") : std::to_string(v); };
  return format("{\"unit\": \"%s\", \"max_waves\": %u, \"waves_per_workgroup\": %u, "
                "\"workgroups\": %u, \"waves\": %u, \"fraction\": %.6f, \"limited_by\": \"%s\", "
                "\"workgroups_by_waves\": %s, \"workgroups_by_lds\": %s, "
                "\"workgroups_by_registers\": %s, \"lds_per_unit\": %u, "
                "\"registers_known\": %s, \"vgprs\": %s, \"agprs\": %s, \"sgprs\": %s, "
                "\"registers\": %s}",
                o.unit, o.maxWaves, o.wavesPerBlock, o.blocks, o.waves(), o.fraction(),
                o.limitedBy, jsonLimit(o.byWaves).c_str(), jsonLimit(o.byLds).c_str(),
                jsonLimit(o.byRegisters).c_str(), o.ldsPerUnit,
                o.registersKnown ? "true" : "false", reg(k.registers.vgprs).c_str(),
                reg(k.registers.agprs).c_str(), reg(k.registers.sgprs).c_str(),
                reg(k.registers.regs).c_str());
}

std::string siteJson(const Group &g) {
  const Site &s = g.site;
  std::string out = format("{\"pc\": %u, \"instructions\": %u, \"location\": %s, \"file\": %s, "
                           "\"line\": %u, \"col\": %u, \"op\": %s, \"space\": \"%s\", "
                           "\"bytes_per_lane\": %u, \"executions\": %" PRIu64
                           ", \"lane_accesses\": %" PRIu64 ", ",
                           s.pc, g.instructions, jsonString(location(s)).c_str(),
                           jsonString(s.file).c_str(), s.line, s.col, jsonString(s.op).c_str(),
                           s.shared ? "shared" : "global", s.width, s.executions,
                           s.laneAccesses);
  return out + (s.shared ? "\"shared\": " + sharedJson(s.lds) : "\"global\": " + globalJson(s.global)) +
         "}";
}

std::string kernelJson(const KernelProfile &k, const std::string &device) {
  std::string out = format(
      "{\"name\": %s, \"device\": %s, \"target\": %s, \"wave_size\": %u, "
      "\"launches\": %" PRIu64 ", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
      "\"lds_bytes\": %u, \"threads\": %" PRIu64 ", \"waves\": %" PRIu64 ", ",
      jsonString(k.name).c_str(), jsonString(device).c_str(), jsonString(k.target).c_str(),
      k.waveSize, k.launches, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
      k.block[2], k.ldsBytes, k.threads, k.waves);
  out += "\"occupancy\": " + occupancyJson(k) + ", ";
  std::string perWaveJson, totalJson;
  for (unsigned c = 0; c < kClasses; ++c) {
    const char *sep = c ? ", " : "";
    perWaveJson += format("%s\"%s\": %.3f", sep, className(Class(c)), perWave(k, c));
    totalJson += format("%s\"%s\": %" PRIu64, sep, className(Class(c)), k.threadInsts[c]);
  }
  out += "\"instructions\": {\"per_wave\": {" + perWaveJson + "}, \"thread_total\": {" +
         totalJson + "}, \"mma_wave_instructions\": " + std::to_string(k.mmaWaveInsts) + "}, ";
  out += format("\"wgmma\": {\"warp_instructions\": %" PRIu64 ", \"shared_bytes\": %" PRIu64
                ", \"shared_wavefronts\": %" PRIu64 "}, ",
                k.wgmmaWaveInsts, k.wgmmaSharedBytes, k.wgmmaSharedBytes / 128);
  out += format("\"tma\": {\"zero_fill_sectors\": %" PRIu64 "}, ", k.tmaFillSectors);
  out += "\"global\": " + globalJson(k.globalTotal()) + ", ";
  out += "\"shared\": " + sharedJson(k.sharedTotal()) + ", \"sites\": [";
  const std::vector<Group> groups = groupSites(k.sites);
  for (size_t i = 0; i < groups.size(); ++i)
    out += (i ? ",\n    " : "\n    ") + siteJson(groups[i]);
  return out + (groups.empty() ? "]}" : "\n  ]}");
}

} // namespace

std::string renderText(const std::vector<KernelProfile> &kernels, const std::string &device) {
  std::string out;
  for (const KernelProfile &k : kernels) {
    out += format("profile of %s on %s (%s, wave %u): %" PRIu64 " launch%s, grid [%u, %u, %u] x "
                  "block [%u, %u, %u], %" PRIu64 " waves\n",
                  k.name.c_str(), device.c_str(), k.target.c_str(), k.waveSize, k.launches,
                  k.launches == 1 ? "" : "es", k.grid[0], k.grid[1], k.grid[2], k.block[0],
                  k.block[1], k.block[2], k.waves);
    out += occupancyText(k);
    out += "  instructions per wave:";
    for (unsigned c = 0; c < kClasses; ++c)
      out += format("%s %s %.1f", c ? "," : "", className(Class(c)), perWave(k, c));
    out += format(" (matrix instructions executed: %" PRIu64 ")\n", k.mmaWaveInsts);
    if (k.wgmmaWaveInsts)
      out += format("  wgmma: %" PRIu64 " warp instructions reading %" PRIu64
                    " B of operands from shared memory (%" PRIu64
                    " 128-B wavefronts; the tensor cores' reads, not LSU loads)\n",
                    k.wgmmaWaveInsts, k.wgmmaSharedBytes, k.wgmmaSharedBytes / 128);
    const GlobalCost g = k.globalTotal();
    out += format("  global memory: %" PRIu64 " B requested, %" PRIu64
                  " B moved in %" PRIu64 " 32-B sectors (%" PRIu64 " 64-B, %" PRIu64
                  " 128-B segments), efficiency %.1f%%\n",
                  g.requested, g.sectors * kSectorBytes, g.sectors, g.segments64,
                  g.segments128, 100.0 * g.efficiency());
    const SharedCost s = k.sharedTotal();
    out += format("  shared memory: %" PRIu64 " B requested in %" PRIu64 " phases, %" PRIu64
                  " wavefronts, %" PRIu64 " bank conflicts (extra wavefronts)\n",
                  s.requested, s.phases, s.wavefronts, s.conflicts());
    const std::vector<Group> groups = groupSites(k.sites);
    out += format("  memory instruction sites (%zu, of %zu instructions; xN: N instructions):\n",
                  groups.size(), k.sites.size());
    for (const Group &g : groups)
      out += siteText(g);
  }
  return out;
}

std::string renderJson(const std::vector<KernelProfile> &kernels, const std::string &device) {
  std::string out = "{\"profile_version\": 1, \"kernels\": [";
  for (size_t i = 0; i < kernels.size(); ++i)
    out += (i ? ",\n  " : "\n  ") + kernelJson(kernels[i], device);
  return out + (kernels.empty() ? "]}\n" : "\n]}\n");
}

} // namespace wave::emu::profile
