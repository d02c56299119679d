import { isDeepStrictEqual } from "node:util";
import {
  type AdmissionDecision,
  type AdmissionRequest,
  type AdmissionWebhook,
  allow,
  deny,
  type JsonPatchOperation,
  pointerSegment,
} from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { IN_TENANT_NAMESPACES } from "../controllers/labels.js";
import { classViolation, storageClassViolation } from "./classes.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import { cordonedMessage } from "./owner-labels.js";

interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[] };
  runAsNonRoot?: boolean;
  runAsUser?: number;
}

interface Container {
  name?: string;
  securityContext?: SecurityContext;
  ports?: { hostPort?: number }[];
}

interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  volumes?: {
    hostPath?: unknown;
    ephemeral?: { volumeClaimTemplate?: { spec?: { storageClassName?: string } } };
  }[];
  priorityClassName?: string;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
}

export interface Pod extends AnyObject {
  spec?: PodSpec;
}

function normalizeToleration(t: Toleration) {
  return {
    key: t.key ?? "",
    operator: t.operator ?? "Equal",
    value: t.value ?? "",
    effect: t.effect ?? "",
    tolerationSeconds: t.tolerationSeconds,
  };
}

/**
 * Puts the pod on its tenant's node pool (document 001, step 11): the pool's node selector and
 * tolerations are added. A node selector the user set to another value for a pool key is
 * refused rather than overwritten, so the user learns why the pod would not run where they asked.
 */
export function nodePoolPatch(pod: Pod, tenant: Tenant): AdmissionDecision {
  const pool = tenant.spec.nodePool;
  if (!pool) return allow();
  const spec = pod.spec ?? {};
  const selector = pool.nodeSelector ?? {};
  const ops: JsonPatchOperation[] = [];
  const conflicts = Object.entries(selector)
    .filter(([key, value]) => spec.nodeSelector?.[key] !== undefined && spec.nodeSelector[key] !== value)
    .map(
      ([key, value]) =>
        `spec.nodeSelector[${key}]: "${spec.nodeSelector![key]}" conflicts with the node pool of tenant "${tenant.metadata!.name}" (spec.nodePool.nodeSelector[${key}]: "${value}")`,
    );
  if (conflicts.length) return deny(conflicts.join("; "));
  const missing = Object.entries(selector).filter(([key]) => spec.nodeSelector?.[key] === undefined);
  if (!spec.nodeSelector) {
    if (missing.length)
      ops.push({ op: "add", path: "/spec/nodeSelector", value: Object.fromEntries(missing) });
  } else {
    for (const [key, value] of missing)
      ops.push({ op: "add", path: `/spec/nodeSelector/${pointerSegment(key)}`, value });
  }
  const present = (spec.tolerations ?? []).map(normalizeToleration);
  const toAdd = (pool.tolerations ?? []).filter(
    (t) => !present.some((p) => isDeepStrictEqual(p, normalizeToleration(t as Toleration))),
  );
  if (!spec.tolerations) {
    if (toAdd.length) ops.push({ op: "add", path: "/spec/tolerations", value: toAdd });
  } else {
    for (const toleration of toAdd) ops.push({ op: "add", path: "/spec/tolerations/-", value: toleration });
  }
  return allow(ops);
}

function normalizeCapability(capability: string): string {
  return capability.toUpperCase().replace(/^CAP_/, "");
}

/** What one container may not do in the tenant, each naming the field. */
function containerViolations(container: Container, path: string, podSpec: PodSpec, tenant: Tenant): string[] {
  const allowed = tenant.spec.allowed ?? {};
  const name = tenant.metadata!.name!;
  const sc = container.securityContext ?? {};
  const violations: string[] = [];
  if (sc.privileged === true && !allowed.privileged) {
    violations.push(
      `${path}.securityContext.privileged: privileged containers are not allowed in tenant "${name}"`,
    );
  }
  if (sc.allowPrivilegeEscalation === true && !allowed.allowPrivilegeEscalation) {
    violations.push(
      `${path}.securityContext.allowPrivilegeEscalation: privilege escalation is not allowed in tenant "${name}"`,
    );
  }
  const permitted = (allowed.addedCapabilities ?? []).map(normalizeCapability);
  (sc.capabilities?.add ?? []).forEach((capability, i) => {
    if (permitted.includes(normalizeCapability(capability))) return;
    violations.push(
      `${path}.securityContext.capabilities.add[${i}]: capability "${capability}" is not allowed in tenant "${name}" (spec.allowed.addedCapabilities: ${permitted.length ? permitted.join(", ") : "none"})`,
    );
  });
  (container.ports ?? []).forEach((port, i) => {
    if (port.hostPort && !allowed.hostPorts) {
      violations.push(`${path}.ports[${i}].hostPort: host ports are not allowed in tenant "${name}"`);
    }
  });
  if (allowed.requireRunAsNonRoot) {
    const runAsNonRoot = sc.runAsNonRoot ?? podSpec.securityContext?.runAsNonRoot;
    const runAsUser = sc.runAsUser ?? podSpec.securityContext?.runAsUser;
    if (runAsNonRoot !== true) {
      violations.push(
        `${path}.securityContext.runAsNonRoot: must be true in tenant "${name}" (spec.allowed.requireRunAsNonRoot)`,
      );
    } else if (runAsUser === 0) {
      violations.push(
        `${path}.securityContext.runAsUser: 0 (root) is not allowed in tenant "${name}" (spec.allowed.requireRunAsNonRoot)`,
      );
    }
  }
  return violations;
}

/** Every container of the pod with its field path: containers, init containers, ephemeral containers. */
function containersOf(spec: PodSpec): { container: Container; path: string }[] {
  return [
    ...(spec.containers ?? []).map((container, i) => ({ container, path: `spec.containers[${i}]` })),
    ...(spec.initContainers ?? []).map((container, i) => ({ container, path: `spec.initContainers[${i}]` })),
    ...(spec.ephemeralContainers ?? []).map((container, i) => ({
      container,
      path: `spec.ephemeralContainers[${i}]`,
    })),
  ];
}

/** The workload-safety rules of spec.allowed, for a new pod. */
export function podViolations(pod: Pod, tenant: Tenant): string[] {
  const spec = pod.spec ?? {};
  const allowed = tenant.spec.allowed ?? {};
  const name = tenant.metadata!.name!;
  const violations: string[] = [];
  if (spec.hostNetwork && !allowed.hostNetwork)
    violations.push(`spec.hostNetwork: the host network is not allowed in tenant "${name}"`);
  if (spec.hostPID && !allowed.hostPID)
    violations.push(`spec.hostPID: the host PID namespace is not allowed in tenant "${name}"`);
  if (spec.hostIPC && !allowed.hostIPC)
    violations.push(`spec.hostIPC: the host IPC namespace is not allowed in tenant "${name}"`);
  (spec.volumes ?? []).forEach((volume, i) => {
    if (volume.hostPath && !allowed.hostPath)
      violations.push(`spec.volumes[${i}].hostPath: hostPath volumes are not allowed in tenant "${name}"`);
    const template = volume.ephemeral?.volumeClaimTemplate;
    if (template) {
      const message = storageClassViolation(
        `spec.volumes[${i}].ephemeral.volumeClaimTemplate.spec.storageClassName`,
        template.spec?.storageClassName,
        tenant,
      );
      if (message) violations.push(message);
    }
  });
  for (const { container, path } of containersOf(spec))
    violations.push(...containerViolations(container, path, spec, tenant));
  if (spec.priorityClassName) {
    const message = classViolation(
      "spec.priorityClassName",
      "priority class",
      "spec.allowed.priorityClasses",
      allowed.priorityClasses,
      spec.priorityClassName,
      name,
    );
    if (message) violations.push(message);
  }
  if (spec.nodeName && tenant.spec.nodePool) {
    violations.push(
      `spec.nodeName: pods of tenant "${name}" are placed by the scheduler within spec.nodePool; nodeName cannot be set`,
    );
  }
  return violations;
}

/** Ephemeral containers added to a running pod (kubectl debug) follow the same rules. */
export function ephemeralContainerViolations(before: Pod, after: Pod, tenant: Tenant): string[] {
  const existing = new Set((before.spec?.ephemeralContainers ?? []).map((c) => c.name));
  const spec = after.spec ?? {};
  return (spec.ephemeralContainers ?? []).flatMap((container, i) =>
    existing.has(container.name)
      ? []
      : containerViolations(container, `spec.ephemeralContainers[${i}]`, spec, tenant),
  );
}

export function checkPod(request: AdmissionRequest, tenant: Tenant): string | undefined {
  const violations =
    request.operation === "CREATE"
      ? tenant.spec.cordoned
        ? [cordonedMessage(tenant.metadata!.name!)]
        : podViolations(request.object as Pod, tenant)
      : ephemeralContainerViolations(request.oldObject as Pod, request.object as Pod, tenant);
  return violations.length ? violations.join("; ") : undefined;
}

export function podWebhooks(context: AdmissionContext): AdmissionWebhook[] {
  const { lookup } = context;
  return [
    {
      name: "pod-node-pool.tenants.tenantry.dev",
      kind: "mutating",
      path: "/mutate/pods",
      // Fail: a pod admitted without its node selector could run on another tenant's nodes.
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      rules: [
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["CREATE"],
          resources: ["pods"],
          scope: "Namespaced",
        },
      ],
      async handle(request) {
        if (request.subResource || !request.namespace) return allow();
        const tenant = await lookup.tenantOfNamespace(request.namespace);
        return tenant ? nodePoolPatch(request.object as Pod, tenant) : allow();
      },
    },
    {
      name: "pod-safety.tenants.tenantry.dev",
      kind: "validating",
      path: "/validate/pods",
      // Fail: these rules keep tenant workloads off the host (privileges, host namespaces, host
      // paths and ports); letting a pod through unchecked would break isolation.
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      rules: [
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["CREATE"],
          resources: ["pods"],
          scope: "Namespaced",
        },
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["UPDATE"],
          resources: ["pods/ephemeralcontainers"],
          scope: "Namespaced",
        },
      ],
      async handle(request: AdmissionRequest) {
        if (!request.namespace) return allow();
        if (request.operation === "CREATE" && request.subResource) return allow();
        if (request.operation === "UPDATE" && request.subResource !== "ephemeralcontainers") return allow();
        const tenant = await lookup.tenantOfNamespace(request.namespace);
        if (!tenant) return allow();
        const message = checkPod(request, tenant);
        return message ? deny(message) : allow();
      },
    },
  ];
}
