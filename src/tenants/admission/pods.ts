import { isDeepStrictEqual } from "node:util";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  type JsonPatchOperation,
  pointerSegment,
} from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { IN_TENANT_NAMESPACES } from "../controllers/labels.js";
import { classViolation, storageClassViolation } from "./classes.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import { cordonedMessage } from "./cordoned.js";
import { pullPolicyDefault, pullPolicyViolation, registryViolation } from "./images.js";

interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  runAsNonRoot?: boolean;
  runAsUser?: number;
  seccompProfile?: { type?: string };
}

interface Container {
  name?: string;
  image?: string;
  imagePullPolicy?: string;
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
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type?: string } };
  os?: { name?: string };
  runtimeClassName?: string;
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
 * Puts the pod on its tenant's node pool (CloudVeneto CaaS, step 11): the pool's node selector and
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
  const registry = registryViolation(`${path}.image`, container.image, tenant);
  if (registry) violations.push(registry);
  const policy = pullPolicyViolation(`${path}.imagePullPolicy`, container.imagePullPolicy, tenant);
  if (policy) violations.push(policy);
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
  if (spec.runtimeClassName) {
    // A pod without one runs with the cluster's default handler, which needs no permission.
    const message = classViolation(
      "spec.runtimeClassName",
      "runtime class",
      "spec.allowed.runtimeClasses",
      allowed.runtimeClasses,
      spec.runtimeClassName,
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

/** A pod's images may change after creation (`kubectl set image`): a changed one must come from an allowed registry. */
export function changedImageViolations(before: Pod, after: Pod, tenant: Tenant): string[] {
  const previous = new Map(
    containersOf(before.spec ?? {}).map(({ container, path }) => [path, container.image]),
  );
  return containersOf(after.spec ?? {}).flatMap(({ container, path }) => {
    if (previous.get(path) === container.image) return [];
    const message = registryViolation(`${path}.image`, container.image, tenant);
    return message ? [message] : [];
  });
}

export function checkPod(request: AdmissionRequest, tenant: Tenant): string | undefined {
  let violations: string[];
  if (request.operation === "CREATE") {
    violations = tenant.spec.cordoned
      ? [cordonedMessage(tenant.metadata!.name!)]
      : podViolations(request.object as Pod, tenant);
  } else if (request.subResource === "ephemeralcontainers") {
    violations = ephemeralContainerViolations(request.oldObject as Pod, request.object as Pod, tenant);
  } else {
    violations = changedImageViolations(request.oldObject as Pod, request.object as Pod, tenant);
  }
  return violations.length ? violations.join("; ") : undefined;
}

/** Every container of the pod with its JSON Pointer, for patches. */
function containerPointers(spec: PodSpec): { container: Container; pointer: string }[] {
  return [
    ...(spec.containers ?? []).map((container, i) => ({ container, pointer: `/spec/containers/${i}` })),
    ...(spec.initContainers ?? []).map((container, i) => ({
      container,
      pointer: `/spec/initContainers/${i}`,
    })),
    ...(spec.ephemeralContainers ?? []).map((container, i) => ({
      container,
      pointer: `/spec/ephemeralContainers/${i}`,
    })),
  ];
}

/**
 * Pull policies the API server filled in that the tenant does not allow become the first allowed
 * one (spec.allowed.imagePullPolicies): `kubectl run --image=nginx:1.27` keeps working in a tenant
 * that allows only Always, while a policy the author chose is judged, not overwritten.
 */
export function pullPolicyPatch(
  targets: { container: Container; pointer: string }[],
  tenant: Tenant,
): JsonPatchOperation[] {
  const allowed = tenant.spec.allowed?.imagePullPolicies;
  return targets.flatMap(({ container, pointer }) => {
    const policy = pullPolicyDefault(container.imagePullPolicy, container.image, allowed);
    if (!policy) return [];
    return [{ op: "add" as const, path: `${pointer}/imagePullPolicy`, value: policy }];
  });
}

/**
 * In a tenant that enforces the restricted Pod Security Standard, what the standard requires and a
 * pod leaves unset is filled in, as OpenShift's restricted profile does: non-root, the runtime's
 * default seccomp profile, no privilege escalation, every capability dropped. Whatever the pod
 * sets stays as it is and is judged by Pod Security admission. Pod-level settings only on
 * creation (they are immutable); container settings on the containers given.
 */
export function restrictedDefaultsPatch(
  pod: Pod,
  targets: { container: Container; pointer: string }[],
  tenant: Tenant,
  creating: boolean,
): JsonPatchOperation[] {
  if (tenant.spec.podSecurity?.level !== "restricted") return [];
  const spec = pod.spec ?? {};
  if (spec.os?.name === "windows") return [];
  const ops: JsonPatchOperation[] = [];
  if (creating) {
    const podContext = spec.securityContext;
    const wanted: Record<string, unknown> = {};
    if (podContext?.runAsNonRoot === undefined) wanted.runAsNonRoot = true;
    if (podContext?.seccompProfile === undefined) wanted.seccompProfile = { type: "RuntimeDefault" };
    if (!podContext) {
      if (Object.keys(wanted).length) ops.push({ op: "add", path: "/spec/securityContext", value: wanted });
    } else {
      for (const [field, value] of Object.entries(wanted))
        ops.push({ op: "add", path: `/spec/securityContext/${field}`, value });
    }
  }
  for (const { container, pointer } of targets) {
    const context = container.securityContext;
    const wanted: Record<string, unknown> = {};
    // Kubernetes refuses allowPrivilegeEscalation: false beside privileged or CAP_SYS_ADMIN; such a
    // container is left for Pod Security to refuse with its own reason.
    const addsSysAdmin = (context?.capabilities?.add ?? []).some((c) => /^(CAP_)?SYS_ADMIN$/i.test(c));
    if (context?.allowPrivilegeEscalation === undefined && context?.privileged !== true && !addsSysAdmin)
      wanted.allowPrivilegeEscalation = false;
    if (!context) {
      ops.push({
        op: "add",
        path: `${pointer}/securityContext`,
        value: { ...wanted, capabilities: { drop: ["ALL"] } },
      });
      continue;
    }
    for (const [field, value] of Object.entries(wanted))
      ops.push({ op: "add", path: `${pointer}/securityContext/${field}`, value });
    if (!context.capabilities)
      ops.push({ op: "add", path: `${pointer}/securityContext/capabilities`, value: { drop: ["ALL"] } });
    else if (!context.capabilities.drop)
      ops.push({ op: "add", path: `${pointer}/securityContext/capabilities/drop`, value: ["ALL"] });
  }
  return ops;
}

/**
 * Everything tenantry fills into a pod of a tenant: the node pool, pull policies and the restricted
 * profile's defaults; on an ephemeral-container update only the new containers are touched.
 */
export function mutatePod(request: AdmissionRequest, tenant: Tenant): AdmissionDecision {
  const pod = request.object as Pod;
  const spec = pod.spec ?? {};
  if (request.operation === "UPDATE") {
    const existing = new Set(
      (request.oldObject as Pod | undefined)?.spec?.ephemeralContainers?.map((c) => c.name),
    );
    const added = (spec.ephemeralContainers ?? [])
      .map((container, i) => ({ container, pointer: `/spec/ephemeralContainers/${i}` }))
      .filter(({ container }) => !existing.has(container.name));
    return allow([...pullPolicyPatch(added, tenant), ...restrictedDefaultsPatch(pod, added, tenant, false)]);
  }
  const pool = nodePoolPatch(pod, tenant);
  if (!pool.allowed) return pool;
  const targets = containerPointers(spec);
  return allow([
    ...(pool.patch ?? []),
    ...pullPolicyPatch(targets, tenant),
    ...restrictedDefaultsPatch(pod, targets, tenant, true),
  ]);
}

export function podWebhooks(context: AdmissionContext): AdmissionCheck[] {
  const { lookup } = context;
  return [
    {
      name: "pod-defaults.tenants.tenantry.dev",
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
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["UPDATE"],
          resources: ["pods/ephemeralcontainers"],
          scope: "Namespaced",
        },
      ],
      async handle(request) {
        if (!request.namespace) return allow();
        if (request.operation === "CREATE" && request.subResource) return allow();
        if (request.operation === "UPDATE" && request.subResource !== "ephemeralcontainers") return allow();
        const tenant = await lookup.tenantOfNamespace(request.namespace);
        return tenant ? mutatePod(request, tenant) : allow();
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
          // The main resource for image changes; ephemeral containers for kubectl debug.
          operations: ["UPDATE"],
          resources: ["pods", "pods/ephemeralcontainers"],
          scope: "Namespaced",
        },
      ],
      async handle(request: AdmissionRequest) {
        if (!request.namespace) return allow();
        if (request.subResource && request.subResource !== "ephemeralcontainers") return allow();
        if (request.operation === "CREATE" && request.subResource) return allow();
        const tenant = await lookup.tenantOfNamespace(request.namespace);
        if (!tenant) return allow();
        const message = checkPod(request, tenant);
        return message ? deny(message) : allow();
      },
    },
  ];
}
