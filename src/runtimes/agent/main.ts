/**
 * The runtime agent's program (the image ghcr.io/tenantry/runtime-agent runs it with node): its
 * settings come from the environment the runtimes controller gives the sidecar (`--token-file`
 * overrides $TENANTRY_AGENT_TOKEN_FILE); it logs one JSON line per event and ends on SIGTERM.
 */
import { parseArgs } from "node:util";
import { runAgent } from "./agent.js";
import { AGENT_ENV, AGENT_SIDECAR_ENV } from "./env.js";

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the environment variable ${name} is not set`);
  return value;
}

const log = (message: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), message, ...fields })}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { "token-file": { type: "string" } } });
  const period = Number(process.env[AGENT_SIDECAR_ENV.periodSeconds] ?? "60");
  if (!Number.isFinite(period) || period <= 0)
    throw new Error(`${AGENT_SIDECAR_ENV.periodSeconds} must be a number of seconds above 0`);
  const source = process.env[AGENT_SIDECAR_ENV.sourceUrl];
  const sourceToken = process.env[AGENT_SIDECAR_ENV.sourceToken];
  const settings = {
    tokenFile: values["token-file"] ?? setting(AGENT_ENV.tokenFile),
    stopUrl: setting(AGENT_ENV.stopUrl),
    reportUrl: setting(AGENT_SIDECAR_ENV.reportUrl),
    ...(source ? { sourceUrl: source } : {}),
    sourceField: process.env[AGENT_SIDECAR_ENV.sourceField] ?? "last_activity",
    ...(sourceToken ? { sourceToken } : {}),
    periodMs: period * 1000,
  };
  const stop = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => stop.abort());
  log("runtime agent running", { runtime: process.env[AGENT_ENV.runtime], source, periodSeconds: period });
  await runAgent(settings, log, stop.signal);
}

main().catch((err: unknown) => {
  log("runtime agent failed", { error: (err as Error).message });
  process.exitCode = 1;
});
