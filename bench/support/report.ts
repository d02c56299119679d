import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { V1Namespace } from "@kubernetes/client-node";

export type Cell = string | number;

/** The plain table format of every benchmark: right-aligned columns, a dashed rule under the header. */
export function table(headers: string[], rows: Cell[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === "number" ? c.toFixed(1) : c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? "").length)));
  const line = (r: Cell[]) => r.map((c, i) => String(c ?? "").padStart(widths[i] ?? 0)).join("  ");
  return [line(cells[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join(
    "\n",
  );
}

export function printTable(title: string, headers: string[], rows: Cell[][], footnotes: string[]): void {
  process.stdout.write(`\n${title}\n${table(headers, rows)}\n${footnotes.join("\n")}\n`);
}

/** Nearest-rank percentile of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Milliseconds with one decimal, or "-" when there is nothing to show. */
export function ms(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : "-";
}

export function seconds(valueMs: number): string {
  return Number.isFinite(valueMs) ? (valueMs / 1000).toFixed(1) : "-";
}

export function rssMiBOfPid(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture Node.js runs on. */
const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a process has used so far, from /proc; NaN once it is gone. */
export function cpuSecondsOfPid(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds the whole machine has spent busy so far (all cores, from /proc/stat). */
export function machineBusySeconds(): number {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Samples this process's RSS (tenantry runs in it) and other processes' RSS until stopped. */
export class MemorySampler {
  private timer?: NodeJS.Timeout;
  private readonly peaks = new Map<string, number>();
  private readonly last = new Map<string, number>();

  constructor(
    private readonly pids: Record<string, number>,
    private readonly intervalMs = 500,
  ) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): { peak: Record<string, number>; last: Record<string, number> } {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    return { peak: Object.fromEntries(this.peaks), last: Object.fromEntries(this.last) };
  }

  private record(name: string, mib: number): void {
    if (!Number.isFinite(mib)) return;
    this.last.set(name, mib);
    this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, mib));
  }

  private sample(): void {
    this.record("self", process.memoryUsage().rss / 1024 / 1024);
    for (const [name, pid] of Object.entries(this.pids)) this.record(name, rssMiBOfPid(pid));
  }
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function boundedAll<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const index = next++;
      if (index >= items.length) return;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** HTTP status code of a client-node error, if it carries one. */
export function errorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === "number" ? code : undefined;
}

export function errorText(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  if (typeof body === "string") {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      return body;
    }
  }
  if (body && typeof body === "object" && "message" in body) return String(body.message);
  return (err as Error).message ?? String(err);
}

/** A progress line on stderr, with the time. */
export function progress(line: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** The machine's load average over 1, 5 and 15 minutes, for the tables' footnotes. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

/** Creates a namespace labelled as a benchmark's own, unless it exists. */
export async function ensureNamespace(
  core: { createNamespace(request: { body: V1Namespace }): Promise<unknown> },
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  try {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  } catch (err) {
    if (errorCode(err) !== 409) throw err;
  }
}
