import type { TenantSpec } from "./tenant.js";

/**
 * The quota a tenant gets when its creator says nothing else: compute requests and limits,
 * ephemeral storage, and the objects a tenant could otherwise pile up (the resource and object
 * quotas of the Multi-Tenancy Benchmarks, MTB-PL1-CC-FNS-1 and -2). No NodePort or LoadBalancer
 * Services: they reach past the tenant's network.
 */
export const DEFAULT_TENANT_QUOTA: Readonly<Record<string, string>> = {
  pods: "50",
  "requests.cpu": "8",
  "limits.cpu": "16",
  "requests.memory": "16Gi",
  "limits.memory": "32Gi",
  "requests.ephemeral-storage": "20Gi",
  "limits.ephemeral-storage": "40Gi",
  services: "20",
  "services.nodeports": "0",
  "services.loadbalancers": "0",
  configmaps: "100",
  secrets: "100",
  persistentvolumeclaims: "20",
  replicationcontrollers: "10",
  resourcequotas: "10",
};

/** Requests and limits for containers that name none, so that a quota on limits never refuses `kubectl run`. */
export const DEFAULT_TENANT_LIMIT_RANGES: NonNullable<TenantSpec["limitRanges"]> = [
  {
    name: "defaults",
    limits: [
      {
        type: "Container",
        defaultRequest: { cpu: "100m", memory: "128Mi", "ephemeral-storage": "256Mi" },
        default: { cpu: "500m", memory: "512Mi", "ephemeral-storage": "1Gi" },
      },
    ],
  },
];

/**
 * A tenant as `tenantry tenant create` and the demo make it unless told otherwise: the restricted
 * Pod Security Standard, the default quota (entries given in `spec.quota.hard` replace those of the
 * same name), default container requests and limits, and images always pulled with the pod's own
 * credentials. What `spec` sets wins; the rest of the schema's defaults (ClusterIP Services only,
 * no host access, network isolation) apply as to any tenant.
 */
export function withTenantDefaults(spec: TenantSpec): TenantSpec {
  const quota = spec.quota?.quotaRef
    ? spec.quota
    : { hard: { ...DEFAULT_TENANT_QUOTA, ...spec.quota?.hard } };
  return {
    ...spec,
    podSecurity: spec.podSecurity ?? { level: "restricted" },
    quota,
    limitRanges: spec.limitRanges ?? DEFAULT_TENANT_LIMIT_RANGES,
    allowed: { imagePullPolicies: ["Always"], ...spec.allowed },
  };
}
