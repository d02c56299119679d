/**
 * What a caller sees of a runtime that exists but does not serve yet (or any more): a 503 page that
 * follows the start live through the proxy's own server-sent events at `/r/<token>/.tenantry/progress`
 * (fed by the informer) and reloads once the runtime is ready; JSON clients get a problem body with
 * phase and reason, and Retry-After while it starts.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { EventStream } from "../../common/index.js";
import type { Runtime } from "../api/runtime.js";
import { START_STEPS } from "../api/runtime.js";
import { escapeHtml, page, sendHtml, sendProblem, wantsJson } from "./respond.js";
import { RESERVED_SEGMENT, type RouteView } from "./route.js";

export const PROGRESS_SEGMENT = `${RESERVED_SEGMENT}progress`;
/** Seconds a client is asked to wait before trying a starting runtime again. */
export const RETRY_AFTER_SECONDS = 2;

export interface ProgressEvent {
  /** Ready (stop following), Starting, Stopped, Failed or Deleting. */
  status: RouteView["status"];
  phase: string;
  reason?: string;
  message?: string;
  /** Share of the start sequence's steps done, 0–100. */
  progress: number;
  steps: { name: string; state: string; message?: string }[];
  ready: boolean;
}

export function progressOf(runtime: Runtime, view: RouteView): ProgressEvent {
  const steps = START_STEPS.map((name) => {
    const step = runtime.status?.steps?.find((s) => s.name === name);
    return { name, state: step?.state ?? "Pending", ...(step?.message ? { message: step.message } : {}) };
  });
  const done = steps.filter((s) => s.state === "Done").length;
  return {
    status: view.status,
    phase: view.phase,
    ...(view.reason ? { reason: view.reason } : {}),
    ...(view.message ? { message: view.message } : {}),
    progress: Math.round((done / steps.length) * 100),
    steps,
    ready: view.status === "ready",
  };
}

function describe(view: RouteView): string {
  const what = `runtime ${view.service}/${view.instance}`;
  switch (view.status) {
    case "starting":
      return `${what} is starting (${view.phase})`;
    case "stopped":
      return `${what} is stopped: start it again for a new address`;
    case "failed":
      return `${what} failed${view.reason ? ` (${view.reason})` : ""}`;
    case "deleting":
      return `${what} is being deleted`;
    default:
      return `${what} is ${view.phase}`;
  }
}

/** 503 for a runtime that is not ready: a live page for people, a problem body for JSON clients. */
export function sendNotReady(
  request: IncomingMessage,
  response: ServerResponse,
  runtime: Runtime,
  view: RouteView,
): void {
  const event = progressOf(runtime, view);
  const retry: Record<string, string> =
    view.status === "starting" ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {};
  if (wantsJson(request) || request.method !== "GET") {
    sendProblem(response, {
      status: 503,
      title: "not running",
      detail: `${describe(view)}${view.message ? `: ${view.message}` : ""}`,
      extra: {
        phase: view.phase,
        ...(view.reason ? { reason: view.reason } : {}),
        progress: event.progress,
        steps: event.steps,
      },
      headers: retry,
    });
    return;
  }
  sendHtml(response, 503, notReadyPage(view, event), retry);
}

function stepItems(event: ProgressEvent): string {
  return event.steps
    .map(
      (s) =>
        `<li class="${escapeHtml(s.state)}">${escapeHtml(s.name)}: ${escapeHtml(s.state)}${s.message ? ` — ${escapeHtml(s.message)}` : ""}</li>`,
    )
    .join("");
}

function notReadyPage(view: RouteView, event: ProgressEvent): string {
  const progressUrl = `/r/${view.token}${PROGRESS_SEGMENT}`;
  // The script renders the same markup as the server does, from each event.
  const script = `<script>
(() => {
  const esc = (t) => String(t).replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"})[c]);
  const source = new EventSource(${JSON.stringify(progressUrl)});
  source.onmessage = (e) => {
    const d = JSON.parse(e.data);
    if (d.ready) { source.close(); location.reload(); return; }
    document.getElementById("phase").textContent = d.phase + (d.reason ? " (" + d.reason + ")" : "") + (d.message ? ": " + d.message : "");
    document.getElementById("bar").value = d.progress;
    document.getElementById("steps").innerHTML = d.steps.map((s) =>
      '<li class="' + esc(s.state) + '">' + esc(s.name) + ": " + esc(s.state) + (s.message ? " — " + esc(s.message) : "") + "</li>").join("");
  };
  source.addEventListener("gone", () => {
    source.close();
    document.getElementById("phase").textContent = "This address is no longer valid: the runtime was stopped or deleted.";
  });
})();
</script><noscript><meta http-equiv="refresh" content="${RETRY_AFTER_SECONDS * 2}"></noscript>`;
  return page(
    `${view.service}/${view.instance}: ${view.phase}`,
    `<h1>${escapeHtml(describe(view))}</h1>
<p id="phase">${escapeHtml(view.phase)}${view.reason ? ` (${escapeHtml(view.reason)})` : ""}${view.message ? `: ${escapeHtml(view.message)}` : ""}</p>
<progress id="bar" max="100" value="${event.progress}"></progress>
<ol id="steps">${stepItems(event)}</ol>
<p>This page follows the start and opens the runtime as soon as it answers.</p>${script}`,
  );
}

/** One caller following a route's progress; ended when the runtime is ready or its token is gone. */
export class ProgressStream {
  private readonly events: EventStream;

  constructor(
    readonly token: string,
    response: ServerResponse,
    onEnd: (stream: ProgressStream) => void,
  ) {
    this.events = new EventStream(response);
    this.events.onEnd(() => onEnd(this));
  }

  /** Sends the runtime's state if it changed; ends the stream once it is ready. */
  update(runtime: Runtime | undefined, view: RouteView | undefined): void {
    if (this.events.ended) return;
    if (!runtime || !view || view.token !== this.token) {
      this.events.send({ ready: false }, "gone");
      this.end();
      return;
    }
    this.events.sendIfChanged(progressOf(runtime, view));
    if (view.status === "ready") this.end();
  }

  end(): void {
    this.events.end();
  }
}
