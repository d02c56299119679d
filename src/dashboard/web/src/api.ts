/** The dashboard's JSON API, as the server answers it. */

export interface ApiProblem {
  status: number;
  message: string;
  field?: string;
}

export class ApiError extends Error {
  constructor(readonly problem: ApiProblem) {
    super(problem.message);
  }
}

export type {
  AccessGrantView,
  Alert,
  BackupView,
  ClustersAnswer,
  ClusterView,
  LogicalCloudView,
  Me,
  NamespaceRow,
  OffloadingView,
  Overview,
  Paged,
  PeeringView,
  QuotaRow,
  RuntimesAnswer,
  RuntimeView,
  TenantDetail,
  TenantSummary,
  UsagePoint,
  UserUsage,
  WorkerNodeView,
} from "../../model.js";

let csrf = "";

/** Dispatched on window when the server no longer knows the session. */
export const LOGGED_OUT = "tenantry:logged-out";

export function rememberCsrf(token: string): void {
  csrf = token;
}

async function request(method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`/api${path}`, {
    method,
    credentials: "same-origin",
    headers: {
      accept: "application/json",
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...(method !== "GET" ? { "x-csrf-token": csrf } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (res.ok) return res;
  // Refusals are RFC 9457 problems: detail says what is wrong, field where.
  const problem = (await res.json().catch(() => ({}))) as { detail?: string; title?: string; field?: string };
  // A session that ended (expired, logged out elsewhere) brings the login page back.
  if (res.status === 401 && path !== "/login" && path !== "/session") dispatchEvent(new Event(LOGGED_OUT));
  throw new ApiError({
    status: res.status,
    message: problem.detail ?? problem.title ?? `HTTP ${res.status}`,
    ...(problem.field ? { field: problem.field } : {}),
  });
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  return (await res.json().catch(() => ({}))) as T;
}

/** Downloads what the API answers as a file named `filename` (its refusal is thrown, not saved). */
export async function download(path: string, filename: string): Promise<void> {
  const blob = await (await request("GET", path)).blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/** One change the server saw: its kind and, for a tenant's, the tenant's name. */
export interface Change {
  kind: string;
  name?: string;
}

type ChangeListener = (changes: Change[]) => void;
const listeners = new Set<ChangeListener>();
let source: EventSource | undefined;

/** Server-sent change events (from the server's informers): each listener hears every batch. */
export function onChange(listener: ChangeListener): () => void {
  listeners.add(listener);
  if (!source) {
    source = new EventSource("/api/events");
    source.addEventListener("change", (event) => {
      const batch = JSON.parse((event as MessageEvent<string>).data) as Change[];
      for (const l of listeners) l(batch);
    });
  }
  return () => {
    listeners.delete(listener);
  };
}

export function closeEvents(): void {
  source?.close();
  source = undefined;
}
