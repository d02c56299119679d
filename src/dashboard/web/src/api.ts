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

export interface Me {
  username: string;
  tenant: string | null;
  operator: boolean;
  csrf: string;
}

export interface QuotaRow {
  resource: string;
  used: string;
  hard: string;
  usedValue: number;
  hardValue: number;
}

export interface TenantSummary {
  name: string;
  owners: string;
  namespaceCount: number;
  ready: boolean;
  readyMessage?: string;
  cordoned: boolean;
  quota: QuotaRow[];
}

export interface UsagePoint {
  t: number;
  used: number;
  hard: number;
}

export interface TenantDetail extends TenantSummary {
  ownerList: { kind: string; name: string }[];
  users: { name: string }[];
  namespaces: { name: string; phase: string; created?: string }[];
  history: Record<string, UsagePoint[]>;
}

export interface ClusterView {
  name: string;
  labels: Record<string, string>;
  provider: string;
  description: string;
  ready: boolean;
  readyMessage: string;
  version: string;
  nodes: number;
  capacity: string;
  lastProbe: string;
}

export interface Alert {
  kind: string;
  name: string;
  message: string;
}

export interface Overview {
  tenants: { total: number; offset: number; items: TenantSummary[] };
  clusters: ClusterView[] | null;
  alerts: Alert[];
}

export interface WorkerNodeView {
  name: string;
  tenant: string;
  owner: string;
  policy: string;
  flavor: string;
  provider: string;
  phase: string;
  message: string;
}

export interface LogicalCloudView {
  namespace: string;
  name: string;
  level: string;
  state: string;
  ready: boolean;
  message: string;
  clusters: { cluster: string; state: string; message: string }[];
}

export interface RuntimeView {
  user: string;
  tenant: string;
  service: string;
  instance: string;
  phase: string;
  desiredState: string;
  ready: boolean;
  message?: string;
  url?: string;
  lastActivity?: string;
  startedAt?: string;
}

let csrf = "";

/** Dispatched on window when the server no longer knows the session. */
export const LOGGED_OUT = "tenantry:logged-out";

export function rememberCsrf(token: string): void {
  csrf = token;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
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
  const parsed = (await res.json().catch(() => ({}))) as { error?: ApiProblem };
  // A session that ended (expired, logged out elsewhere) brings the login page back.
  if (res.status === 401 && path !== "/login" && path !== "/session") dispatchEvent(new Event(LOGGED_OUT));
  if (!res.ok) throw new ApiError(parsed.error ?? { status: res.status, message: `HTTP ${res.status}` });
  return parsed as T;
}

type ChangeListener = (kinds: Set<string>) => void;
const listeners = new Set<ChangeListener>();
let source: EventSource | undefined;

/** Server-sent change events (from the server's informers): each listener hears the kinds that changed. */
export function onChange(listener: ChangeListener): () => void {
  listeners.add(listener);
  if (!source) {
    source = new EventSource("/api/events");
    source.addEventListener("change", (event) => {
      const batch = JSON.parse((event as MessageEvent<string>).data) as { kind: string }[];
      const kinds = new Set(batch.map((e) => e.kind));
      for (const l of listeners) l(kinds);
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
