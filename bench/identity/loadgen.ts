/**
 * Open-loop HTTPS JSON-POST load generator, run as its own process so that its timers and TLS work
 * do not share an event loop with the server it measures. Reads a PostPlan as JSON on stdin, writes
 * a PostResult as JSON on stdout.
 *
 * Open loop: request i is due at start + i/rate whatever happened to earlier ones, and its latency
 * counts from when it was due, so a slow server cannot hide its queueing by slowing the sender.
 * Request i sends bodies[i % bodies.length]. Writes `load:start` and `load:end` lines on stderr
 * around the sending, so the parent can measure other processes over the same span.
 */

import { Agent } from "node:https";
import { openLoop } from "../support/open-loop.js";
import { postJson } from "../support/post.js";

export interface PostPlan {
  url: string;
  /** Pre-serialised JSON request bodies, sent in turn. */
  bodies: string[];
  rate: number;
  durationMs: number;
  /** A request not answered this long after it was due is an error. */
  timeoutMs: number;
  /** Most keep-alive connections open at once; requests beyond them wait for one. */
  connections: number;
  caPem: string;
  /** The client certificate the server requires (tenantry's review endpoints want kube-apiserver's). */
  client?: { certPem: string; keyPem: string };
  /**
   * Dotted paths into each 200 answer (e.g. `status.allowed`); answers are counted by the values
   * found there, as `path=value` joined with commas.
   */
  outcomeFields: string[];
}

export interface PostResult {
  due: number;
  completed: number;
  errors: number;
  errorSamples: string[];
  elapsedMs: number;
  /** Latency of each request answered with HTTP 200, ms, from when it was due. */
  latencies: number[];
  /** Answers by outcome key (see PostPlan.outcomeFields). */
  outcomes: Record<string, number>;
  /** This process: CPU seconds (user + system) over the run, and its peak RSS in MiB. */
  cpuSeconds: number;
  rssPeakMiB: number;
}

function at(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

async function run(plan: PostPlan): Promise<PostResult> {
  const result: PostResult = {
    due: 0,
    completed: 0,
    errors: 0,
    errorSamples: [],
    elapsedMs: 0,
    latencies: [],
    outcomes: {},
    cpuSeconds: 0,
    rssPeakMiB: 0,
  };
  const fail = (message: string) => {
    result.errors++;
    if (result.errorSamples.length < 5 && !result.errorSamples.includes(message))
      result.errorSamples.push(message);
  };
  const sampleRss = () => {
    result.rssPeakMiB = Math.max(result.rssPeakMiB, process.memoryUsage().rss / 1024 / 1024);
  };
  const rssTimer = setInterval(sampleRss, 250);
  const agent = new Agent({
    keepAlive: true,
    maxSockets: plan.connections,
    ca: plan.caPem,
    ...(plan.client ? { cert: plan.client.certPem, key: plan.client.keyPem } : {}),
  });

  const one = async (index: number, deadline: number): Promise<string> => {
    const response = await postJson(plan.url, plan.bodies[index % plan.bodies.length]!, agent, deadline);
    if (response.status !== 200) throw new Error(`HTTP ${response.status} ${response.body.slice(0, 200)}`);
    const answer = JSON.parse(response.body) as unknown;
    return plan.outcomeFields.map((path) => `${path}=${String(at(answer, path))}`).join(",");
  };

  const total = Math.round((plan.rate * plan.durationMs) / 1000);
  result.due = total;
  // The parent samples other processes' CPU between these two lines.
  process.stderr.write("load:start\n");
  const cpuBefore = process.cpuUsage();
  result.elapsedMs = await openLoop({
    total,
    intervalMs: 1000 / plan.rate,
    timeoutMs: plan.timeoutMs,
    send: one,
    onAnswer: (outcome, latency) => {
      result.completed++;
      result.latencies.push(latency);
      result.outcomes[outcome] = (result.outcomes[outcome] ?? 0) + 1;
    },
    onError: (err) => fail(err.message),
  });
  const cpu = process.cpuUsage(cpuBefore);
  process.stderr.write("load:end\n");
  result.cpuSeconds = (cpu.user + cpu.system) / 1e6;
  clearInterval(rssTimer);
  sampleRss();
  agent.destroy();
  return result;
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const plan = JSON.parse(Buffer.concat(chunks).toString()) as PostPlan;
process.stdout.write(JSON.stringify(await run(plan)));
