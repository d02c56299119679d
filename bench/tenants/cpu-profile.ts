import { writeFile } from "node:fs/promises";
import type { Profiler } from "node:inspector";
import { Session } from "node:inspector/promises";

/** One function's share of the profiled samples: self (in the function) and total (on the stack). */
export interface ProfiledFunction {
  name: string;
  selfPct: number;
  totalPct: number;
}

/**
 * Samples this process's CPU (V8's profiler, as `node --cpu-prof` does) between `start` and
 * `stop`, so that a profile covers one phase of a benchmark rather than the whole run.
 */
export async function startCpuProfile(): Promise<{ stop(file: string): Promise<Profiler.Profile> }> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 500 });
  await session.post("Profiler.start");
  return {
    async stop(file) {
      const { profile } = await session.post("Profiler.stop");
      session.disconnect();
      await writeFile(file, JSON.stringify(profile));
      return profile;
    },
  };
}

const frameName = (node: Profiler.ProfileNode): string => {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^file:\/\//, "").replace(/^.*\/(node_modules\/|src\/|bench\/)/, "$1");
  return `${functionName || "(anonymous)"} ${file ? `${file}:${lineNumber + 1}` : ""}`.trim();
};

/**
 * Per function (name, file, line): the share of samples in it (self) and under it (total), highest
 * total first. Aggregated per node of the call tree (each node's own hits counted once for every
 * distinct function on its path), so the cost is the tree's size, not the number of samples.
 */
export function summarizeProfile(profile: Profiler.Profile): ProfiledFunction[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const hits = new Map<number, number>();
  for (const id of profile.samples ?? []) hits.set(id, (hits.get(id) ?? 0) + 1);
  const names = new Map(profile.nodes.map((n) => [n.id, frameName(n)]));
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let counted = 0;
  for (const [id, count] of hits) {
    if (byId.get(id)?.callFrame.functionName === "(idle)") continue;
    counted += count;
    const leafName = names.get(id)!;
    self.set(leafName, (self.get(leafName) ?? 0) + count);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) onStack.add(names.get(at)!);
    for (const name of onStack) total.set(name, (total.get(name) ?? 0) + count);
  }
  const pct = (n: number) => (100 * n) / Math.max(1, counted);
  return [...total]
    .map(([name, t]) => ({ name, selfPct: pct(self.get(name) ?? 0), totalPct: pct(t) }))
    .sort((a, b) => b.totalPct - a.totalPct);
}

/** The share of samples in which the process was idle (waiting for I/O or timers), in %. */
export function idlePercent(profile: Profiler.Profile): number {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  const samples = profile.samples ?? [];
  return (100 * samples.filter((id) => idle.has(id)).length) / Math.max(1, samples.length);
}
