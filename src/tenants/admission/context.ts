import type { TenantryIdentity } from "./identity.js";
import type { IngressHostClaims } from "./ingress-hosts.js";
import type { TenantLookup } from "./lookup.js";
import type { NamespaceQuota } from "./namespace-quota.js";

/** What every tenant webhook reads: the tenants, and who tenantry and the cluster are. */
export interface AdmissionContext {
  lookup: TenantLookup;
  /** Resolved once (it may need to ask the API server who tenantry is); awaited by every handler. */
  identity(): Promise<TenantryIdentity>;
  namespaceQuota: NamespaceQuota;
  ingressHosts: IngressHostClaims;
}

/** The metadata admission decisions read. */
export interface ObjectMetadata {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
}

export interface AnyObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMetadata;
  [field: string]: unknown;
}
