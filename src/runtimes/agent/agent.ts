/**
 * The runtime agent: a sidecar in a runtime's pod (RuntimeService `spec.agent`). Every period it
 * reads the runtime's own last activity (Jupyter Server's `/api/status` `last_activity`, or any
 * JSON endpoint), reports it to the Admin API with the pod's projected token, and learns from the
 * answer what culling counts. Once the runtime is idle past its idle timeout it stops the runtime
 * itself (`DELETE $TENANTRY_STOP_URL?idleSeconds=…`, recorded as a cull), so a runtime whose agent
 * runs is culled even while the runtimes controller is away.
 */
import { readFile } from "node:fs/promises";

export interface AgentSettings {
  /** The pod's projected token (audience tenantry-runtimes), read again at each use: it is renewed. */
  tokenFile: string;
  stopUrl: string;
  reportUrl: string;
  /** Where the runtime tells its own last activity (absent: nothing to report, the answer still counts). */
  sourceUrl?: string;
  sourceField: string;
  /** Sent to the source as `Authorization: token …` (Jupyter's token). */
  sourceToken?: string;
  periodMs: number;
  /** Each request's deadline (default 10 s). */
  timeoutMs?: number;
}

/** The Admin API's answer to a report: what culling counts. */
export interface ActivityAnswer {
  lastActivity: string;
  idleTimeoutSeconds?: number;
  maxAgeSeconds?: number;
  activityLagSeconds?: number;
}

export type Log = (message: string, fields?: Record<string, unknown>) => void;

/** What the agent remembers between periods. */
export interface AgentState {
  /** The runtime has answered once: until then it is starting, and not answering is little news. */
  answered: boolean;
  /** Reads that failed before the runtime first answered. */
  unansweredReads?: number;
}

/**
 * Before the runtime first answers, one failed read in this many is logged (the first included):
 * a runtime that is starting stays quiet, one that never answers (a wrong token, URL or field) says why.
 */
const STARTING_LOG_EVERY = 6;

/** Reads the runtime's own last activity; undefined when it does not say (or cannot be reached). */
export async function readActivity(
  settings: AgentSettings,
  log: Log,
  state: AgentState = { answered: true },
): Promise<Date | undefined> {
  if (!settings.sourceUrl) return undefined;
  const failed = (fields: Record<string, unknown>) => {
    if (state.answered) log("the runtime's activity could not be read", fields);
    else {
      const reads = state.unansweredReads ?? 0;
      if (reads % STARTING_LOG_EVERY === 0)
        log("the runtime has not answered yet", { ...fields, reads: reads + 1 });
      state.unansweredReads = reads + 1;
    }
    return undefined;
  };
  try {
    const res = await fetch(settings.sourceUrl, {
      headers: settings.sourceToken ? { authorization: `token ${settings.sourceToken}` } : {},
      signal: AbortSignal.timeout(settings.timeoutMs ?? 10_000),
    });
    if (!res.ok) return failed({ status: res.status, url: settings.sourceUrl });
    state.answered = true;
    const value = ((await res.json()) as Record<string, unknown>)[settings.sourceField];
    const time = typeof value === "string" ? new Date(value) : undefined;
    if (time && Number.isFinite(time.getTime())) return time;
    log("the runtime's answer has no time in its activity field", {
      field: settings.sourceField,
      value: JSON.stringify(value ?? null).slice(0, 100),
    });
    return undefined;
  } catch (err) {
    return failed({ error: (err as Error).message });
  }
}

async function token(settings: AgentSettings): Promise<string> {
  return (await readFile(settings.tokenFile, "utf8")).trim();
}

export async function report(settings: AgentSettings, activity: Date | undefined): Promise<ActivityAnswer> {
  const res = await fetch(settings.reportUrl, {
    method: "POST",
    headers: { authorization: `Bearer ${await token(settings)}`, "content-type": "application/json" },
    body: JSON.stringify(activity ? { lastActivity: activity.toISOString() } : {}),
    signal: AbortSignal.timeout(settings.timeoutMs ?? 10_000),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`the Admin API answered ${res.status}: ${body.slice(0, 500)}`);
  return JSON.parse(body) as ActivityAnswer;
}

/** Seconds idle when the runtime is past its idle timeout at `now` (its lag included); undefined otherwise. */
export function idlePastTimeout(answer: ActivityAnswer, now: number): number | undefined {
  if (answer.idleTimeoutSeconds === undefined) return undefined;
  const idleMs = now - Date.parse(answer.lastActivity);
  const limitMs = (answer.idleTimeoutSeconds + (answer.activityLagSeconds ?? 0)) * 1000;
  return Number.isFinite(idleMs) && idleMs >= limitMs ? Math.floor(idleMs / 1000) : undefined;
}

export async function stopIdle(settings: AgentSettings, idleSeconds: number): Promise<number> {
  const url = new URL(settings.stopUrl);
  url.searchParams.set("idleSeconds", String(idleSeconds));
  const res = await fetch(url, {
    method: "DELETE",
    headers: { authorization: `Bearer ${await token(settings)}` },
    signal: AbortSignal.timeout(settings.timeoutMs ?? 10_000),
  });
  await res.arrayBuffer();
  if (res.status >= 400) throw new Error(`the stop was answered ${res.status}`);
  return res.status;
}

/** One period's work: read, report, and stop the runtime when it is idle past its timeout. */
export async function tick(
  settings: AgentSettings,
  log: Log,
  now = Date.now,
  state: AgentState = { answered: true },
): Promise<"reported" | "stopped"> {
  const activity = await readActivity(settings, log, state);
  const answer = await report(settings, activity);
  const idle = idlePastTimeout(answer, now());
  if (idle === undefined) return "reported";
  log("the runtime is idle past its timeout: stopping it", { idleSeconds: idle });
  await stopIdle(settings, idle);
  return "stopped";
}

/** Runs a tick every period until `signal` aborts; a failed tick is logged and tried again next period. */
export async function runAgent(settings: AgentSettings, log: Log, signal: AbortSignal): Promise<void> {
  const state: AgentState = { answered: false };
  while (!signal.aborted) {
    try {
      await tick(settings, log, Date.now, state);
    } catch (err) {
      log("report failed; trying again next period", { error: (err as Error).message });
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, settings.periodMs);
      signal.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}
