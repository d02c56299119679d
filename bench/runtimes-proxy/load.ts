/**
 * One load point with autocannon: requests spread round-robin over the routes' paths. Latencies
 * are taken from autocannon's `response` events (hrtime, sub-millisecond) rather than its summary,
 * which rounds to whole milliseconds.
 */
import autocannon from "autocannon";

export interface LoadResult {
  /** Mean requests per second over the run. */
  rps: number;
  /** Latency percentiles in ms (nearest rank over every 2xx answer). */
  p50: number;
  p99: number;
  requests: number;
  /** Answers other than 2xx, connection errors and timeouts. */
  failures: number;
}

/** Nearest-rank percentile of a sorted typed array. */
function sortedPercentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export async function load(options: {
  url: string;
  paths: readonly string[];
  connections: number;
  durationSeconds?: number;
  amount?: number;
  /** Sent with every request (the benchmark's credential). */
  headers?: Readonly<Record<string, string>>;
}): Promise<LoadResult> {
  let next = 0;
  const { paths } = options;
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let finished!: (result: autocannon.Result) => void;
  let failed!: (err: unknown) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    finished = resolve;
    failed = reject;
  });
  const instance = autocannon(
    {
      url: options.url,
      connections: options.connections,
      ...(options.headers ? { headers: { ...options.headers } } : {}),
      ...(options.amount ? { amount: options.amount } : { duration: options.durationSeconds ?? 10 }),
      requests: [
        {
          setupRequest: (request) => {
            request.path = paths[next++ % paths.length]!;
            return request;
          },
        },
      ],
    },
    (err, result) => (err ? failed(err) : finished(result)),
  );
  // The instance reports (client, statusCode, bytes, responseTime in ms from hrtime).
  const events = instance as unknown as NodeJS.EventEmitter;
  events.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode < 200 || statusCode > 299) return;
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = responseTime;
  });
  const result = await done;
  const sorted = latencies.subarray(0, count).sort();
  return {
    rps: result.requests.average,
    p50: sortedPercentile(sorted, 50),
    p99: sortedPercentile(sorted, 99),
    requests: result.requests.total,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}
