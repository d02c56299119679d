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
import { Agent, fetch as undiciFetch } from "undici";
import type { AccessGrant } from "../access/index.js";
import type { RuntimeBackup, RuntimeRestore } from "../backup/index.js";
import { statusOf } from "../kube/index.js";
import { validateWorkerNode, type WorkerNode } from "../nodes/index.js";
import {
  OWNER_KINDS,
  TENANT_LABEL,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
  validateTenant,
  withTenantDefaults,
} from "../tenants/index.js";

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

/** A refusal's leading field path; tenantry's admission puts the refusing check's name before it ("pod-safety: spec…"). */
const FIELD_PREFIX = /^(?:[a-z][\w-]*: )?((?:metadata|spec|status)(?:\.[\w-]+|\[[^\]]+\])*): /;

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

/** A comma- (or space-) separated list typed in a form, as a list. */
function listOf(value: unknown): string[] {
  return typeof value === "string"
    ? value
        .split(/[,\s]+/)
        .map((v) => v.trim())
        .filter(Boolean)
    : [];
}

/**
 * A name made unique by the time, as `tenantry runtime backup` names its backups, kept within 63
 * characters: the backup controller puts a backup's or restore's name in a label of its agent Jobs.
 */
export function stamped(base: string, suffix = ""): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15).toLowerCase();
  return `${base.slice(0, 63 - suffix.length - stamp.length - 1)}${suffix}-${stamp}`;
}

export class Actions {
  constructor(private readonly door: ApiDoor) {}

  private custom(token: string): CustomObjectsApi {
    return userKubeConfig(this.door, token).makeApiClient(CustomObjectsApi);
  }

  /** Creates a tenantry.dev object as the person; the API's refusal is thrown as stated. */
  private async create(token: string, plural: string, body: { metadata?: { namespace?: string } }) {
    const custom = this.custom(token);
    const namespace = body.metadata?.namespace;
    const created = namespace
      ? custom.createNamespacedCustomObject({
          group: TENANTRY_GROUP,
          version: TENANTS_VERSION,
          namespace,
          plural,
          body,
        })
      : custom.createClusterCustomObject({ group: TENANTRY_GROUP, version: TENANTS_VERSION, plural, body });
    await created.catch((err) => {
      throw actionErrorOf(err);
    });
  }

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

  /**
   * `tenantry tenant create`: the same spec (with tenantry's defaults), validated locally as the CLI
   * validates it (errors name the field), then created as the person — RBAC decides who may.
   */
  async createTenant(
    token: string,
    body: {
      name?: unknown;
      ownerKind?: unknown;
      ownerName?: unknown;
      namespaces?: unknown;
      namespaceQuota?: unknown;
      quota?: unknown;
      podSecurity?: unknown;
    },
  ): Promise<{ name: string }> {
    const name = requireText(body.name, "metadata.name");
    const ownerKind = body.ownerKind ?? "User";
    if (!OWNER_KINDS.includes(ownerKind as (typeof OWNER_KINDS)[number]))
      throw new ActionError(
        400,
        `spec.owners[0].kind: must be one of ${OWNER_KINDS.join(", ")}`,
        "spec.owners[0].kind",
      );
    const ownerName = requireText(body.ownerName, "spec.owners[0].name");
    const quota: Record<string, string> = {};
    for (const part of listOf(body.quota)) {
      const [resource, value] = part.split("=");
      if (!resource || !value)
        throw new ActionError(
          400,
          `spec.quota.hard: "${part}" must be name=quantity, e.g. pods=20,requests.cpu=4`,
          "spec.quota.hard",
        );
      quota[resource] = value;
    }
    const namespaceQuota = typeof body.namespaceQuota === "string" ? body.namespaceQuota.trim() : "";
    const spec = withTenantDefaults({
      owners: [{ kind: ownerKind as (typeof OWNER_KINDS)[number], name: ownerName }],
      ...(listOf(body.namespaces).length
        ? { namespaces: listOf(body.namespaces).map((n) => ({ name: n })) }
        : {}),
      ...(namespaceQuota ? { namespaceQuota: Number(namespaceQuota) } : {}),
      ...(Object.keys(quota).length ? { quota: { hard: quota } } : {}),
      ...(body.podSecurity ? { podSecurity: { level: body.podSecurity } } : {}),
    } as Tenant["spec"]);
    const tenant: Tenant = { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name }, spec };
    const violations = validateTenant(tenant);
    if (violations.length > 0)
      throw new ActionError(
        400,
        violations.map((v) => `${v.field}: ${v.message}`).join("; "),
        violations[0]!.field,
      );
    await this.create(token, "tenants", tenant);
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
    await this.custom(token)
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

  /**
   * `kubectl create` of an AccessGrant in one of the tenant's namespaces, as the person: the API
   * server checks its schema, tenantry's admission that the person holds what they hand out.
   */
  async grantAccess(
    token: string,
    body: {
      namespace?: unknown;
      name?: unknown;
      granteeKind?: unknown;
      granteeName?: unknown;
      apiGroups?: unknown;
      resources?: unknown;
      verbs?: unknown;
    },
  ): Promise<{ namespace: string; name: string }> {
    const namespace = requireText(body.namespace, "metadata.namespace");
    const name = requireText(body.name, "metadata.name");
    const granteeName = requireText(body.granteeName, "spec.grantees[0].name");
    const grant = {
      apiVersion: TENANTS_API_VERSION,
      kind: "AccessGrant",
      metadata: { name, namespace },
      spec: {
        grantees: [{ kind: body.granteeKind ?? "User", name: granteeName }],
        rules: [
          {
            // "core" (or nothing) is the core group, as RBAC's "".
            apiGroups: listOf(body.apiGroups).map((g) => (g === "core" ? "" : g)),
            resources: listOf(body.resources),
            verbs: listOf(body.verbs),
          },
        ],
      },
    } as unknown as AccessGrant;
    if (grant.spec.rules[0]!.apiGroups.length === 0) grant.spec.rules[0]!.apiGroups = [""];
    await this.create(token, "accessgrants", grant);
    return { namespace, name };
  }

  /** Deletes an AccessGrant as the person (`kubectl delete accessgrant`): the access ends with it. */
  async revokeGrant(token: string, namespace: string, name: string): Promise<void> {
    await this.custom(token)
      .deleteNamespacedCustomObject({
        group: TENANTRY_GROUP,
        version: TENANTS_VERSION,
        namespace,
        plural: "accessgrants",
        name,
      })
      .catch((err) => {
        throw actionErrorOf(err);
      });
  }

  /** `tenantry runtime backup`: a RuntimeBackup of the runtime, created as the person. */
  async backUp(token: string, runtime: { namespace: string; name: string }): Promise<{ name: string }> {
    const backup = {
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeBackup",
      metadata: { name: stamped(runtime.name), namespace: runtime.namespace },
      spec: { runtime: runtime.name, trigger: "Manual" },
    } as RuntimeBackup;
    await this.create(token, "runtimebackups", backup);
    return { name: backup.metadata!.name! };
  }

  /** `tenantry runtime restore`: a RuntimeRestore of one of the runtime's backups, then started. */
  async restore(token: string, namespace: string, backup: string): Promise<{ name: string }> {
    const restore = {
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeRestore",
      metadata: { name: stamped(backup, "-restore"), namespace },
      spec: { backup, startAfter: true },
    } as RuntimeRestore;
    await this.create(token, "runtimerestores", restore);
    return { name: restore.metadata!.name! };
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
    await this.create(token, "workernodes", node);
    return { name: String(body.name) };
  }
}

/**
 * One of tenantry's REST APIs (the runtimes Admin API, the logical clouds' DCM API), called with
 * the person's token as `tenantry runtime` and `tenantry cloud` do; its problems (RFC 9457) become
 * ActionErrors with the field they name.
 */
export class RestClient {
  private readonly agent: Agent | undefined;

  constructor(
    private readonly what: string,
    private readonly endpoint: () => { url: string; caPem?: string } | undefined,
  ) {
    const ca = endpoint()?.caPem;
    this.agent = ca ? new Agent({ connect: { ca } }) : undefined;
  }

  /** The answer: parsed JSON, or the text itself when it is not JSON (a kubeconfig). */
  async call(
    token: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<unknown> {
    const base = this.endpoint()?.url;
    if (!base) throw new ActionError(503, `${this.what} is not running in this tenantry`);
    // A service that does not answer is not the person's fault: a 502 naming it.
    const res = await undiciFetch(`${base}${path}`, {
      method,
      headers: {
        ...headers,
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(this.agent ? { dispatcher: this.agent } : {}),
    }).catch((err: Error) => {
      throw new ActionError(
        502,
        `${this.what} did not answer: ${(err.cause as Error | undefined)?.message ?? err.message}`,
      );
    });
    const text = await res.text();
    const json = res.headers.get("content-type")?.includes("json");
    const parsed = text && json ? (JSON.parse(text) as unknown) : text || undefined;
    if (res.ok) return parsed;
    const problem = (typeof parsed === "object" ? parsed : {}) as {
      detail?: string;
      title?: string;
      field?: string;
    };
    throw new ActionError(res.status, problem.detail ?? problem.title ?? `HTTP ${res.status}`, problem.field);
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }
}
