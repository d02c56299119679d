/**
 * The shapes of the dashboard's JSON API, shared by the server (views.ts) and the client
 * (web/src/api.ts). Types only: nothing here exists at run time, so the client bundles none of it.
 */

/** One observation of a quota: what was used against what was allowed, at a time. */
export interface UsagePoint {
  /** Seconds since the epoch. */
  t: number;
  used: number;
  hard: number;
}

/** One page of a longer list, filtered and sorted on the server. */
export interface Paged<T> {
  total: number;
  offset: number;
  items: T[];
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
  /** used / hard as numbers in the resource's base unit, for charts. */
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

export interface NamespaceRow {
  name: string;
  phase: string;
  created?: string;
}

/** What one user's objects in a tenant use, summed from the objects carrying their user label. */
export interface UserUsage {
  user: string;
  pods: number;
  /** Requests of the user's running and pending pods, as quantities. */
  cpu: string;
  memory: string;
}

export interface AccessGrantView {
  namespace: string;
  name: string;
  grantees: string[];
  rules: string[];
  expiresAt?: string;
  ready: boolean;
  message: string;
}

export interface TenantDetail extends TenantSummary {
  ownerList: { kind: string; name: string }[];
  users: { name: string }[];
  /** A page of the tenant's namespaces (it may have thousands), by name, filtered by part of it. */
  namespaces: Paged<NamespaceRow>;
  /** Every namespace's name, when few enough to offer as choices (AccessGrant's namespace). */
  namespaceChoices: string[];
  history: Record<string, UsagePoint[]>;
  usage: UserUsage[];
  grants: AccessGrantView[];
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

export interface VirtualNodeView {
  name: string;
  ready: boolean;
  message: string;
  /** Allocatable on one line (`cpu=8, memory=16Gi, pods=100`). */
  allocatable: string;
  labels: Record<string, string>;
}

export interface PeeringView {
  name: string;
  remoteClusterId: string;
  ready: boolean;
  healthy: boolean;
  message: string;
  lastHeartbeat: string;
  capacity: string;
  labels: Record<string, string>;
  credentialsExpireAt: string;
  virtualNode?: VirtualNodeView;
}

export interface ClustersAnswer {
  /** The cluster registry, when the person may list it. */
  items: ClusterView[] | null;
  /** This cluster's peerings and their virtual nodes, when the person may list Peerings. */
  peerings: PeeringView[] | null;
}

export interface Alert {
  kind: string;
  name: string;
  namespace?: string;
  message: string;
  /** The MonitorRule that raised it, when it comes from the monitor. */
  rule?: string;
  since?: string;
}

export interface Overview {
  tenants: Paged<TenantSummary>;
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
  /** The project the cloud belongs to (the DCM API's path), when known. */
  project: string;
  name: string;
  level: string;
  state: string;
  ready: boolean;
  message: string;
  clusters: { cluster: string; state: string; message: string }[];
}

export interface OffloadingClusterView {
  cluster: string;
  /** Selected by the offloading's cluster selector (its replica is wanted there). */
  selected: boolean;
  /** Accepted, Creating, CreationLoopBackOff or Terminating (the replica's Ready reason). */
  phase: string;
  ready: boolean;
  message: string;
}

export interface OffloadingView {
  namespace: string;
  tenant: string;
  podOffloadingStrategy: string;
  namespaceMappingStrategy: string;
  remoteNamespace: string;
  /** The cluster selector on one line (`region In (eu)`), empty when every peered cluster is selected. */
  clusterSelector: string;
  phase: string;
  message: string;
  clusters: OffloadingClusterView[];
}

export interface RuntimeView {
  user: string;
  tenant: string;
  service: string;
  instance: string;
  namespace: string;
  name: string;
  phase: string;
  desiredState: string;
  ready: boolean;
  message?: string;
  url?: string;
  lastActivity?: string;
  startedAt?: string;
}

export interface BackupView {
  name: string;
  runtime: string;
  trigger: string;
  phase: string;
  message: string;
  size: number;
  created: string;
  /** The latest restore of this backup, if any. */
  restore?: { name: string; phase: string; message: string };
}

export interface RuntimesAnswer {
  items: RuntimeView[];
  /** Backups by the runtime's `namespace/name`, newest first. */
  backups: Record<string, BackupView[]>;
  services: string[];
}
