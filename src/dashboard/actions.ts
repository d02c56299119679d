/**
 * The dashboard's actions, each made with the person's own token through the same door the CLI's
 * kubeconfigs use (the tenant gateway, else the API server): RBAC, tenantry's authorization webhook
 * and admission decide exactly as for `kubectl` or `tenantry`, and their refusals are shown as they
 * are stated.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { statusOf } from "../kube/index.js";
import { validateWorkerNode, type WorkerNode } from "../nodes/index.js";
import { TENANT_LABEL, TENANTRY_GROUP, TENANTS_API_VERSION, TENANTS_VERSION } from "../tenants/index.js";

/** An action refused: HTTP status, the message as the API stated it, and the field it names if any. */
export class ActionError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Where a person's own requests go: a kube-apiserver-compatible URL and the CA of its certificate. */
export interface ApiDoor {
  url: string;
  caPem: string;
}

export function userKubeConfig(door: ApiDoor, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "tenantry", server: door.url, caData: Buffer.from(door.caPem).toString("base64") }],
    users: [{ name: "person", token }],
    contexts: [{ name: "tenantry", cluster: "tenantry", user: "person" }],
    currentContext: "tenantry",
  });
  return kc;
}

const FIELD_PREFIX = /^((?:metadata|spec|status)(?:\.[\w-]+|\[[^\]]+\])*): /;

/** The API's refusal, with the field it names: a Status cause's field, else a message's leading path. */
export function actionErrorOf(err: unknown): ActionError {
  if (err instanceof ActionError) return err;
  const status = statusOf(err) as
    | { code?: number; message?: string; details?: { causes?: { field?: string; message?: string }[] } }
    | undefined;
  const code = status?.code ?? (err as { code?: number }).code ?? 500;
  const message = status?.message ?? (err as Error).message ?? String(err);
  const cause = status?.details?.causes?.find((c) => c.field);
  const field = cause?.field ?? FIELD_PREFIX.exec(message.replace(/^.*?denied the request: /, ""))?.[1];
  return new ActionError(code >= 400 && code < 600 ? code : 500, message, field);
}

/** Only presence is checked here: the name's rules are the API server's, and its refusal is shown as stated. */
function requireText(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0)
    throw new ActionError(400, `${field}: required`, field);
  return value;
}

export class Actions {
  constructor(private readonly door: ApiDoor) {}

  /** `kubectl create namespace <name> -l tenantry.dev/tenant=<tenant>`, as the person. */
  async createNamespace(token: string, tenant: string, body: { name?: unknown }): Promise<{ name: string }> {
    const name = requireText(body.name, "metadata.name");
    const api = userKubeConfig(this.door, token).makeApiClient(CoreV1Api);
    await api
      .createNamespace({ body: { metadata: { name, labels: { [TENANT_LABEL]: tenant } } } })
      .catch((err) => {
        throw actionErrorOf(err);
      });
    return { name };
  }

  /** Adds an owner to spec.owners (a JSON patch, as `kubectl patch --type json` would). */
  async addOwner(token: string, tenant: string, body: { kind?: unknown; name?: unknown }): Promise<void> {
    const kind = body.kind ?? "User";
    if (kind !== "User" && kind !== "Group" && kind !== "ServiceAccount")
      throw new ActionError(
        400,
        "spec.owners.kind: must be User, Group or ServiceAccount",
        "spec.owners.kind",
      );
    if (typeof body.name !== "string" || !body.name || body.name.length > 253)
      throw new ActionError(400, "spec.owners.name: required, at most 253 characters", "spec.owners.name");
    const api = userKubeConfig(this.door, token).makeApiClient(CustomObjectsApi);
    await api
      .patchClusterCustomObject(
        {
          group: TENANTRY_GROUP,
          version: TENANTS_VERSION,
          plural: "tenants",
          name: tenant,
          body: [{ op: "add", path: "/spec/owners/-", value: { kind, name: body.name } }],
        },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      )
      .catch((err) => {
        throw actionErrorOf(err);
      });
  }

  /** `tenantry node create`: validated as the CLI validates it, then created as the person. */
  async requestNode(
    token: string,
    body: { name?: unknown; flavor?: unknown; provider?: unknown; policy?: unknown; tenant?: unknown },
  ): Promise<{ name: string }> {
    const node = {
      apiVersion: TENANTS_API_VERSION,
      kind: "WorkerNode",
      metadata: { name: body.name },
      spec: {
        flavor: body.flavor,
        provider: body.provider || "simulated",
        policy: body.policy || "private",
        ...(body.tenant ? { tenant: body.tenant } : {}),
      },
    } as unknown as WorkerNode;
    const violations = validateWorkerNode(node);
    if (violations.length) {
      const first = violations[0]!;
      throw new ActionError(400, violations.map((v) => `${v.field}: ${v.message}`).join("; "), first.field);
    }
    const api = userKubeConfig(this.door, token).makeApiClient(CustomObjectsApi);
    await api
      .createClusterCustomObject({
        group: TENANTRY_GROUP,
        version: TENANTS_VERSION,
        plural: "workernodes",
        body: node,
      })
      .catch((err) => {
        throw actionErrorOf(err);
      });
    return { name: String(body.name) };
  }
}

/** The runtimes Admin API, called with the person's token as `tenantry runtime` does. */
export class RuntimesClient {
  constructor(private readonly adminUrl: () => string | undefined) {}

  async call(token: string, method: string, path: string, body?: unknown): Promise<unknown> {
    const base = this.adminUrl();
    if (!base) throw new ActionError(503, "the runtimes Admin API is not running in this tenantry");
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (res.ok) return parsed;
    const problem = (parsed ?? {}) as { detail?: string; title?: string; field?: string };
    throw new ActionError(res.status, problem.detail ?? problem.title ?? `HTTP ${res.status}`, problem.field);
  }
}
