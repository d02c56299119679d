/**
 * The YAML a plugin's deploy-service returns, checked before anything is applied and then made
 * into tenantry's objects. What a plugin may return:
 *
 * - kinds: exactly one workload (apps/v1 Deployment or StatefulSet, one replica), and any number
 *   of v1 Services (ClusterIP), PersistentVolumeClaims, Secrets and ConfigMaps — nothing that
 *   reaches beyond the runtime's namespace or grants anything (no RBAC, no NetworkPolicy, no pods
 *   outside a workload);
 * - only the runtime's namespace (or none, meaning it);
 * - names that are the runtime's name or start with it and `-`;
 * - no owner references, finalizers or service account of its own (tenantry sets them).
 *
 * tenantry then stamps the labels `tenantry.dev/runtime` and `tenantry.dev/runtime-service` on
 * every object and pod template (and claim template), merges the service's pod placement
 * (`RuntimeService.spec.pods`), and gives every runtime pod its agent: a projected service-account
 * token for the audience `tenantry-runtimes` and the URL that stops its runtime. The tenant's
 * admission policies (pod security, quota, allowed classes) still apply: the objects are created
 * through the API server like any other.
 */
import type {
  KubernetesObject,
  V1Container,
  V1EnvVar,
  V1OwnerReference,
  V1PodSpec,
  V1SecurityContext,
  V1Toleration,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { RUNTIMES_AUDIENCE } from "../admin/callers.js";
import { AGENT_CONTAINER, AGENT_ENV, AGENT_SIDECAR_ENV } from "../agent/env.js";
import type { RuntimeAgent, RuntimeServiceSpec } from "../api/runtime-service.js";
import { type DeployServiceResult, RUNTIME_LABEL, RUNTIME_SERVICE_LABEL } from "../plugins/spi.js";
import { type SingleUserServer, singleUserEnv } from "./singleuser.js";

export interface AllowedKind {
  apiVersion: string;
  kind: string;
  /** The runtime's pod comes from it: removed at stop. */
  workload?: boolean;
  /** Kept while the runtime is stopped (its data); removed only with the runtime. */
  kept?: boolean;
}

export const ALLOWED_KINDS: readonly AllowedKind[] = [
  { apiVersion: "apps/v1", kind: "Deployment", workload: true },
  { apiVersion: "apps/v1", kind: "StatefulSet", workload: true },
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "v1", kind: "PersistentVolumeClaim", kept: true },
  { apiVersion: "v1", kind: "Secret", kept: true },
  { apiVersion: "v1", kind: "ConfigMap", kept: true },
];
/** Applied in this order: what pods mount before the pods. */
const APPLY_ORDER = ["ConfigMap", "Secret", "PersistentVolumeClaim", "Service", "Deployment", "StatefulSet"];
export const MAX_OBJECTS = 32;

/** The workload's and its pods' annotation: where the runtime answers (the plugin's `endpoint`). */
export const ENDPOINT_ANNOTATION = "tenantry.dev/endpoint";
export const AGENT_SERVICE_ACCOUNT = "tenantry-runtime-agent";
export const AGENT_VOLUME = "tenantry-agent";
export const AGENT_TOKEN_DIR = "/var/run/secrets/tenantry.dev/agent";
export const AGENT_TOKEN_SECONDS = 3600;
export { AGENT_CONTAINER, AGENT_ENV, AGENT_SIDECAR_ENV };

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** What the plugin returned that cannot be applied; `field` names where (`objects[1].metadata.namespace`). */
export class ManifestError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = "ManifestError";
  }
}

export interface ManifestContext {
  namespace: string;
  /** The Runtime's name: every object's name is it or starts with it and `-`. */
  name: string;
  service: string;
  /** Set when the objects live in the Runtime's own cluster (garbage collection follows it). */
  owner?: V1OwnerReference;
  pods?: RuntimeServiceSpec["pods"];
  /** The URL that stops the runtime, given to its agent. */
  stopUrl: string;
  /** Audience of the agent's token (default `tenantry-runtimes`). */
  audience?: string;
  /** The runtime agent sidecar, when the service asks for it: its settings, image and report URL. */
  agent?: { spec: RuntimeAgent; image: string; reportUrl: string };
  /** A JupyterHub single-user server (singleuser.ts): its first container's environment and token Secret. */
  singleUser?: { server: SingleUserServer; secret: KubernetesObject };
}

export interface Manifest {
  /** In apply order. */
  objects: KubernetesObject[];
  endpoint: { port: number; path: string };
}

type Obj = KubernetesObject & { spec?: Record<string, unknown> } & Record<string, unknown>;

export function kindOf(object: { apiVersion?: string; kind?: string }): AllowedKind | undefined {
  return ALLOWED_KINDS.find((k) => k.apiVersion === object.apiVersion && k.kind === object.kind);
}

/** Parses, checks and completes what deploy-service returned; throws ManifestError naming the field. */
export function buildManifest(result: DeployServiceResult, context: ManifestContext): Manifest {
  const objects = parseObjects(result.yaml);
  const seen = new Set<string>();
  const workloads: Obj[] = [];
  objects.forEach((object, index) => {
    const at = `objects[${index}]`;
    const kind = kindOf(object);
    if (!kind) {
      throw new ManifestError(
        `${at}.kind`,
        `${object.apiVersion ?? "?"} ${object.kind ?? "?"} is not allowed: a plugin may return ${ALLOWED_KINDS.map((k) => `${k.apiVersion} ${k.kind}`).join(", ")}`,
      );
    }
    const name = object.metadata?.name;
    const pattern = object.kind === "Service" ? DNS_LABEL : DNS_SUBDOMAIN;
    if (
      typeof name !== "string" ||
      !pattern.test(name) ||
      name.length > (object.kind === "Service" ? 63 : 253)
    ) {
      throw new ManifestError(
        `${at}.metadata.name`,
        `${JSON.stringify(name ?? null)} is not a valid ${object.kind} name`,
      );
    }
    if (name !== context.name && !name.startsWith(`${context.name}-`)) {
      throw new ManifestError(
        `${at}.metadata.name`,
        `${object.kind} ${name} must be named ${context.name} or start with ${context.name}-`,
      );
    }
    const namespace = object.metadata?.namespace;
    if (namespace !== undefined && namespace !== context.namespace) {
      throw new ManifestError(
        `${at}.metadata.namespace`,
        `${object.kind} ${name} names namespace ${namespace}; a runtime's objects live in ${context.namespace}`,
      );
    }
    for (const field of ["ownerReferences", "finalizers"] as const) {
      if (object.metadata?.[field] !== undefined) {
        throw new ManifestError(`${at}.metadata.${field}`, `set by tenantry, not by a plugin`);
      }
    }
    const id = `${object.kind}/${name}`;
    if (seen.has(id)) throw new ManifestError(`${at}.metadata.name`, `${id} appears twice`);
    seen.add(id);
    if (kind.workload) workloads.push(object);
    if (object.kind === "Service") checkService(object, at);
  });
  if (workloads.length !== 1) {
    throw new ManifestError(
      "objects",
      `exactly one Deployment or StatefulSet is needed (the runtime's pod), ${workloads.length} given`,
    );
  }
  const workload = workloads[0]!;
  const endpoint = endpointOf(result, workload, `objects[${objects.indexOf(workload)}]`);
  const completed = objects.map((object) =>
    complete(
      object,
      context,
      object === workload ? endpoint : undefined,
      `objects[${objects.indexOf(object)}]`,
    ),
  );
  if (context.singleUser) {
    if (seen.has(`Secret/${context.singleUser.server.secretName}`)) {
      throw new ManifestError(
        "objects",
        `the Secret ${context.singleUser.server.secretName} is tenantry's (the server's JupyterHub token)`,
      );
    }
    completed.push(complete(context.singleUser.secret as Obj, context, undefined, "jupyterhub"));
  }
  completed.sort((a, b) => APPLY_ORDER.indexOf(a.kind!) - APPLY_ORDER.indexOf(b.kind!));
  return { objects: completed, endpoint };
}

function parseObjects(yaml: string): Obj[] {
  const documents = parseAllDocuments(yaml);
  const objects: Obj[] = [];
  for (const [index, document] of (Array.isArray(documents) ? documents : [documents]).entries()) {
    const error = document.errors[0];
    if (error) throw new ManifestError(`yaml document ${index}`, `not valid YAML: ${error.message}`);
    const value = document.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== "object" || Array.isArray(value)) {
      throw new ManifestError(`yaml document ${index}`, "not an object");
    }
    objects.push(value as Obj);
  }
  if (objects.length === 0) throw new ManifestError("yaml", "no objects");
  if (objects.length > MAX_OBJECTS) {
    throw new ManifestError("objects", `${objects.length} objects; at most ${MAX_OBJECTS} are allowed`);
  }
  return objects;
}

function checkService(service: Obj, at: string): void {
  const type = (service.spec?.type as string | undefined) ?? "ClusterIP";
  if (type !== "ClusterIP") {
    throw new ManifestError(
      `${at}.spec.type`,
      `${type} is not allowed: runtimes are reached through the runtimes proxy (ClusterIP only)`,
    );
  }
}

function podSpecOf(workload: Obj, at: string): V1PodSpec {
  const template = (workload.spec?.template as { spec?: V1PodSpec } | undefined)?.spec;
  if (!template?.containers?.length) {
    throw new ManifestError(`${at}.spec.template.spec.containers`, "the workload has no containers");
  }
  return template;
}

function endpointOf(result: DeployServiceResult, workload: Obj, at: string): { port: number; path: string } {
  const pod = podSpecOf(workload, at);
  const declared = pod.containers.flatMap((c) => c.ports ?? []).find((p) => p.containerPort)?.containerPort;
  const port = result.endpoint?.port ?? declared;
  if (!port) {
    throw new ManifestError(
      "endpoint.port",
      "the plugin gave no endpoint port and the workload's containers declare none",
    );
  }
  const path = (result.endpoint?.path ?? "").replace(/\/+$/, "");
  if (path && !path.startsWith("/"))
    throw new ManifestError("endpoint.path", `${path} does not start with /`);
  return { port, path };
}

/**
 * Not `app.kubernetes.io/managed-by: tenantry`: in tenant namespaces that label locks an object to
 * tenantry alone, and the cluster's own controllers must keep working on these (claims bound,
 * Deployments rolled out, pods collected).
 */
function labelsOf(context: ManifestContext): Record<string, string> {
  return { [RUNTIME_LABEL]: context.name, [RUNTIME_SERVICE_LABEL]: context.service };
}

function complete(
  object: Obj,
  context: ManifestContext,
  endpoint: { port: number; path: string } | undefined,
  at: string,
): KubernetesObject {
  const labels = labelsOf(context);
  const copy = structuredClone(object);
  copy.metadata = {
    ...copy.metadata,
    namespace: context.namespace,
    labels: { ...(copy.metadata?.labels ?? {}), ...labels },
    ...(context.owner ? { ownerReferences: [context.owner] } : {}),
    ...(endpoint
      ? {
          annotations: {
            ...(copy.metadata?.annotations ?? {}),
            [ENDPOINT_ANNOTATION]: JSON.stringify(endpoint),
          },
        }
      : {}),
  };
  if (!kindOf(copy)?.workload) return copy;
  copy.spec ??= {};
  const spec = copy.spec;
  if (spec.replicas !== undefined && spec.replicas !== 1) {
    throw new ManifestError(
      `${at}.spec.replicas`,
      `${String(spec.replicas)}: a runtime runs one pod (replicas 1)`,
    );
  }
  spec.replicas = 1;
  // One pod holding a ReadWriteOnce claim: the old pod goes before the new one comes.
  if (copy.kind === "Deployment") spec.strategy ??= { type: "Recreate" };
  const template = spec.template as { metadata?: KubernetesObject["metadata"]; spec: V1PodSpec };
  template.metadata = {
    ...template.metadata,
    labels: { ...(template.metadata?.labels ?? {}), ...labels },
    // On the pod too: where it answers is read off the pod that answers.
    annotations: {
      ...(template.metadata?.annotations ?? {}),
      [ENDPOINT_ANNOTATION]: JSON.stringify(endpoint),
    },
  };
  const claimTemplates = spec.volumeClaimTemplates as
    | { metadata?: KubernetesObject["metadata"] }[]
    | undefined;
  for (const claim of claimTemplates ?? []) {
    claim.metadata = { ...claim.metadata, labels: { ...(claim.metadata?.labels ?? {}), ...labels } };
  }
  template.spec = podSpec(podSpecOf(copy, at), context, `${at}.spec.template.spec`, endpoint!);
  return copy;
}

function podSpec(
  given: V1PodSpec,
  context: ManifestContext,
  at: string,
  endpoint: { port: number; path: string },
): V1PodSpec {
  if (given.serviceAccountName !== undefined || given.serviceAccount !== undefined) {
    throw new ManifestError(`${at}.serviceAccountName`, "set by tenantry (the runtime's agent account)");
  }
  if (given.volumes?.some((v) => v.name === AGENT_VOLUME)) {
    throw new ManifestError(`${at}.volumes`, `the volume name ${AGENT_VOLUME} is tenantry's`);
  }
  const pods = context.pods ?? {};
  const tolerations = [...(given.tolerations ?? [])];
  for (const toleration of (pods.tolerations ?? []) as V1Toleration[]) {
    if (!tolerations.some((t) => JSON.stringify(t) === JSON.stringify(toleration)))
      tolerations.push(toleration);
  }
  const env = [
    { name: AGENT_ENV.tokenFile, value: `${AGENT_TOKEN_DIR}/token` },
    { name: AGENT_ENV.stopUrl, value: context.stopUrl },
    { name: AGENT_ENV.runtime, value: `${context.namespace}/${context.name}` },
  ];
  const ours = new Set<string>(env.map((e) => e.name));
  return {
    ...given,
    serviceAccountName: AGENT_SERVICE_ACCOUNT,
    // The agent's token is for the Admin API alone: no token for the API server in the pod.
    automountServiceAccountToken: false,
    ...(pods.nodeSelector || given.nodeSelector
      ? { nodeSelector: { ...(given.nodeSelector ?? {}), ...(pods.nodeSelector ?? {}) } }
      : {}),
    ...(tolerations.length ? { tolerations } : {}),
    ...(pods.priorityClassName ? { priorityClassName: pods.priorityClassName } : {}),
    volumes: [
      ...(given.volumes ?? []),
      {
        name: AGENT_VOLUME,
        projected: {
          sources: [
            {
              serviceAccountToken: {
                audience: context.audience ?? RUNTIMES_AUDIENCE,
                expirationSeconds: AGENT_TOKEN_SECONDS,
                path: "token",
              },
            },
          ],
        },
      },
    ],
    containers: [
      ...withSingleUserEnv(given.containers, context, endpoint),
      ...(context.agent ? [agentContainer(given, context.agent, endpoint, `${at}.containers`)] : []),
    ].map((container) => ({
      ...container,
      env: [...(container.env ?? []).filter((e) => !ours.has(e.name)), ...env],
      volumeMounts: [
        ...(container.volumeMounts ?? []).filter((m) => m.mountPath !== AGENT_TOKEN_DIR),
        { name: AGENT_VOLUME, mountPath: AGENT_TOKEN_DIR, readOnly: true },
      ],
    })),
  };
}

/** The first container with KubeSpawner's `JUPYTERHUB_*` environment, when the runtime is a single-user server. */
function withSingleUserEnv(
  containers: V1Container[],
  context: ManifestContext,
  endpoint: { port: number; path: string },
): V1Container[] {
  if (!context.singleUser) return containers;
  const hub = singleUserEnv(context.singleUser.server, endpoint.port);
  const names = new Set(hub.map((e) => e.name));
  const [first, ...rest] = containers;
  return [{ ...first!, env: [...(first!.env ?? []).filter((e) => !names.has(e.name)), ...hub] }, ...rest];
}

/**
 * The runtime agent sidecar: it reads the runtime's own last activity at `spec.activity.path` on the
 * pod's address (the plugin's port and base path) and reports it to the Admin API with the pod's
 * projected token, which every container of the pod gets.
 */
function agentContainer(
  pod: V1PodSpec,
  agent: NonNullable<ManifestContext["agent"]>,
  endpoint: { port: number; path: string },
  at: string,
): V1Container {
  if (pod.containers.some((c) => c.name === AGENT_CONTAINER)) {
    throw new ManifestError(
      `${at}`,
      `the container name ${AGENT_CONTAINER} is tenantry's (the runtime agent)`,
    );
  }
  const { activity, periodSeconds } = agent.spec;
  const env: V1EnvVar[] = [
    { name: AGENT_SIDECAR_ENV.podIp, valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    { name: AGENT_SIDECAR_ENV.reportUrl, value: agent.reportUrl },
    { name: AGENT_SIDECAR_ENV.periodSeconds, value: String(periodSeconds ?? 60) },
  ];
  if (activity) {
    env.push(
      {
        name: AGENT_SIDECAR_ENV.sourceUrl,
        value: `http://$(${AGENT_SIDECAR_ENV.podIp}):${endpoint.port}${endpoint.path}${activity.path}`,
      },
      { name: AGENT_SIDECAR_ENV.sourceField, value: activity.field ?? "last_activity" },
    );
    if (activity.tokenFromEnv) {
      const source = pod.containers.flatMap((c) => c.env ?? []).find((e) => e.name === activity.tokenFromEnv);
      if (!source) {
        throw new ManifestError(
          "agent.activity.tokenFromEnv",
          `no container of the runtime's pod sets ${activity.tokenFromEnv}`,
        );
      }
      env.push({ ...source, name: AGENT_SIDECAR_ENV.sourceToken });
    }
  }
  return {
    name: AGENT_CONTAINER,
    image: agent.image,
    // The token's path as an argument too: where containers see host paths, the runtime maps it.
    args: ["--token-file", `$(${AGENT_ENV.tokenFile})`],
    env,
    // A small Node.js process: enough for one request a period.
    resources: { requests: { cpu: "10m", memory: "48Mi" }, limits: { memory: "128Mi" } },
    securityContext: agentSecurityContext(pod),
  };
}

/**
 * The agent runs as the runtime's own user when the runtime names one, so the pod's containers
 * share a user and the kubelet makes the token that user's alone (0600); it never gains privileges.
 */
function agentSecurityContext(pod: V1PodSpec): V1SecurityContext {
  const main = pod.containers[0]?.securityContext;
  const runAsUser = main?.runAsUser ?? pod.securityContext?.runAsUser;
  const runAsGroup = main?.runAsGroup ?? pod.securityContext?.runAsGroup;
  return {
    ...(runAsUser !== undefined ? { runAsUser } : {}),
    ...(runAsGroup !== undefined ? { runAsGroup } : {}),
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"] },
  };
}
