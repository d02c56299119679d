/** Runtime objects as the controller would leave them, and small HTTP/WebSocket clients, for the proxy's tests. */
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import WebSocket from "ws";
import type { Runtime, RuntimeService } from "../../src/runtimes/index.js";

export const API = "tenantry.dev/v1alpha1";

/** A route token as the controller makes them (contract rule 2). */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export interface RuntimeShape {
  namespace?: string;
  name: string;
  token: string;
  user?: string;
  tenant?: string;
  service?: string;
  /** Set: Running and Ready at this endpoint; absent: Starting. */
  endpoint?: string;
  desiredState?: "Running" | "Stopped";
  phase?: string;
  reason?: string;
  message?: string;
}

const STEPS = ["Namespace", "Volumes", "Scheduled", "Pulling", "Ready"] as const;

/** A Runtime's status as the controller writes it: steps, phase, route, endpoint and Ready. */
export function runtimeStatus(shape: RuntimeShape): NonNullable<Runtime["status"]> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const ready = shape.endpoint !== undefined;
  return {
    phase: (shape.phase ?? (ready ? "Running" : "Starting")) as never,
    ...(shape.reason ? { reason: shape.reason } : {}),
    ...(shape.message ? { message: shape.message } : {}),
    route: { token: shape.token },
    ...(shape.endpoint ? { endpoint: { url: shape.endpoint, pod: `${shape.name}-pod` } } : {}),
    steps: STEPS.map((name, i) => ({
      name,
      state: ready || i < 2 ? "Done" : i === 2 ? "InProgress" : "Pending",
      time: now,
    })) as never,
    conditions: [
      {
        type: "Ready",
        status: ready ? "True" : "False",
        reason: ready ? "Answering" : "Starting",
        message: ready ? "the runtime answers" : "the runtime is starting",
        lastTransitionTime: now,
      },
    ],
  };
}

export function runtimeObject(shape: RuntimeShape): Runtime {
  return {
    apiVersion: API,
    kind: "Runtime",
    metadata: { namespace: shape.namespace ?? "rt-test", name: shape.name, resourceVersion: "1" },
    spec: {
      user: shape.user ?? "alice",
      tenant: shape.tenant ?? "acme",
      service: shape.service ?? "notebook",
      instance: shape.name,
      desiredState: shape.desiredState ?? "Running",
    },
    status: runtimeStatus(shape),
  } as Runtime;
}

/** A RuntimeService; `routeAccess: "Public"` for one whose runtimes the proxy serves to anyone with the URL. */
export function serviceObject(
  name: string,
  proxyModule?: { name: string; secretRef?: { name: string } },
  options: { routeAccess?: "Owner" | "Public" } = {},
): RuntimeService {
  return {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name },
    spec: {
      plugin: { builtin: "generic" },
      ...(proxyModule ? { proxyModule } : {}),
      ...(options.routeAccess ? { routeAccess: options.routeAccess } : {}),
    },
  } as RuntimeService;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

/** One HTTP request with node's client (no connection reuse, headers as sent). */
export function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: <T>() => JSON.parse(body) as T,
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    // A request nobody answers fails the test with what it was, instead of hanging it.
    req.setTimeout(30_000, () =>
      req.destroy(new Error(`no answer to ${options.method ?? "GET"} ${url} within 30 s`)),
    );
    req.end(options.body);
  });
}

/** A WebSocket through `url`: resolves with the socket and the backend's greeting once open, rejects with the refusal. */
export function openWebSocket(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ ws: WebSocket; greeting: { url: string; headers: Record<string, string> } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers });
    ws.once("message", (data) => resolve({ ws, greeting: JSON.parse(String(data)) }));
    ws.once("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        reject(
          Object.assign(new Error(`upgrade refused: ${res.statusCode}`), {
            status: res.statusCode,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        ),
      );
    });
    ws.once("error", reject);
  });
}

/** Sends `text` and resolves with the echo. */
export function echo(ws: WebSocket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    ws.once("message", (data) => resolve(String(data)));
    ws.once("error", reject);
    ws.send(text);
  });
}

/** Resolves when the socket has closed. */
export function closed(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => ws.once("close", () => resolve()));
}
