/** The benchmark's routes: the same tokens and backend paths for tenantry's proxy and configurable-http-proxy. */
import { createHash } from "node:crypto";
import type { HubTokenLookup, Runtime, RuntimeService } from "../../src/runtimes/index.js";

export const BENCH_SERVICE = "bench";
export const BENCH_NAMESPACE = "bench-runtimes";
const API = "tenantry.dev/v1alpha1";

/** Route token number `i` (43 url-safe characters, as the controller makes them). */
export function benchToken(i: number): string {
  return createHash("sha256").update(`bench-route-${i}`).digest("base64url");
}

/** `/r/<token>` of route `i`: the prefix in both proxies. */
export function routePrefix(i: number): string {
  return `/r/${benchToken(i)}`;
}

/**
 * Runtime `i`, ready at `backend`. Its endpoint keeps the prefix (as Jupyter's base_url does), so
 * the backend sees the same path through either proxy (configurable-http-proxy forwards the prefix).
 */
export function benchRuntime(i: number, backend: string): Runtime {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: API,
    kind: "Runtime",
    metadata: { namespace: BENCH_NAMESPACE, name: `rt-${i}`, resourceVersion: "1" },
    spec: {
      user: `user-${i}`,
      tenant: "bench",
      service: BENCH_SERVICE,
      instance: `rt-${i}`,
      desiredState: "Running",
    },
    status: {
      phase: "Running",
      route: { token: benchToken(i) },
      endpoint: { url: `${backend}${routePrefix(i)}` },
      conditions: [
        { type: "Ready", status: "True", reason: "Answering", message: "", lastTransitionTime: now },
      ],
    },
  } as Runtime;
}

export function benchService(): RuntimeService {
  return {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name: BENCH_SERVICE },
    spec: { plugin: { builtin: "generic" } },
  } as RuntimeService;
}

/**
 * The credential every request of the benchmark carries, to both proxies (configurable-http-proxy
 * checks none and forwards it; tenantry's proxy checks it and keeps it from the runtime): a
 * JupyterHub API token allowed `access:servers` on every server, as an admin's is.
 */
const BENCH_TOKEN = `thub_${createHash("sha256").update("bench-credential").digest("base64url")}`;
export const BENCH_CREDENTIAL: Readonly<Record<string, string>> = { authorization: `token ${BENCH_TOKEN}` };

/**
 * Who holds the benchmark's token, for tenantry's proxy: credentials given in code, as the routes
 * are, so the rows measure the proxy's guard on every request — the header read, its digest looked
 * up in the guard's cache, the access decision, the header removed — and not an identity provider,
 * which tenantry's proxy too asks at most once per credential per 10 s.
 */
export const benchCredentials: HubTokenLookup = async (token) =>
  token === BENCH_TOKEN
    ? { username: "bench-admin", groups: [], scopes: new Set(["access:servers"]) }
    : undefined;
