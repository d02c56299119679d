import { UserError } from "../common/index.js";

/** What one local cluster looks like. */
export interface ClusterSpec {
  /** DNS-1123 label, e.g. `home`, `edge-1`. */
  name: string;
  /** Number of simulated nodes (default 3). */
  nodes?: number;
  /** Cluster labels, stamped on every simulated node (region, provider, zone prefix, …). */
  labels?: Record<string, string>;
  /** Capacity of each simulated node. */
  nodeCapacity?: { cpu: string; memory: string; pods: string; "ephemeral-storage"?: string };
  /** Fixed kube-apiserver port; a free one is picked when absent. */
  apiserverPort?: number;
  /** Extra kube-apiserver flags, e.g. `--authentication-token-webhook-config-file=…`. */
  extraApiserverFlags?: string[];
  /** Extra kube-controller-manager flags, e.g. `--kube-api-qps=200` (a benchmark's control plane tuned for its size). */
  extraControllerManagerFlags?: string[];
  /**
   * Wire kube-apiserver to tenantry's token authentication and authorization webhooks (on a port
   * fixed at start, see ClusterState.accessWebhooks). Only for a cluster tenantry runs on: while
   * tenantry is down, tenant users there are denied.
   */
  accessWebhooks?: boolean;
  /**
   * The process node's spec.podCIDR (a /24); default 10.200.<k>.0/24, k the cluster's network on
   * this machine. Two clusters may be given the same one, as real clusters often are.
   */
  podCidr?: string;
}

export const REGION_LABEL = "topology.kubernetes.io/region";
export const ZONE_LABEL = "topology.kubernetes.io/zone";
export const PROVIDER_LABEL = "tenantry.dev/provider";
/** Marks nodes whose status KWOK simulates. */
export const KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node";

/** The embedded default: one home cluster and two remote clusters in other regions and providers. */
export const defaultClusters: readonly ClusterSpec[] = [
  {
    name: "home",
    accessWebhooks: true,
    labels: {
      [REGION_LABEL]: "eu-west",
      [PROVIDER_LABEL]: "onprem",
      "tenantry.dev/security-policy": "standard",
    },
  },
  {
    name: "edge-1",
    labels: { [REGION_LABEL]: "eu-south", [PROVIDER_LABEL]: "aws", "tenantry.dev/security-policy": "strict" },
  },
  {
    name: "edge-2",
    labels: {
      [REGION_LABEL]: "us-east",
      [PROVIDER_LABEL]: "gcp",
      "tenantry.dev/security-policy": "standard",
    },
  },
];

const NAME = /^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$/;

export function validateClusterSpec(spec: ClusterSpec): void {
  if (!NAME.test(spec.name)) {
    throw new UserError(
      `cluster name "${spec.name}" is not valid: use lowercase letters, digits and "-", start with a letter, at most 32 characters`,
    );
  }
  const nodes = spec.nodes ?? 3;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 500) {
    throw new UserError(
      `cluster "${spec.name}": nodes must be a whole number from 1 to 500, got ${spec.nodes}`,
    );
  }
  if (spec.podCidr !== undefined && !/^10\.\d{1,3}\.\d{1,3}\.0\/24$/.test(spec.podCidr)) {
    throw new UserError(
      `cluster "${spec.name}": podCidr "${spec.podCidr}" must be a /24 in 10.0.0.0/8 such as 10.200.7.0/24`,
    );
  }
  for (const [component, flags] of [
    ["kube-apiserver", spec.extraApiserverFlags],
    ["kube-controller-manager", spec.extraControllerManagerFlags],
  ] as const) {
    for (const flag of flags ?? []) {
      if (!/^--[a-z0-9-]+(=.*)?$/.test(flag)) {
        throw new UserError(
          `cluster "${spec.name}": extra ${component} flag "${flag}" must look like --name=value`,
        );
      }
    }
  }
}

/** Looks a name up among the defaults, or builds a plain spec for a new name. */
export function specFor(name: string): ClusterSpec {
  return defaultClusters.find((c) => c.name === name) ?? { name, labels: { [REGION_LABEL]: name } };
}
