/** Virtual nodes and a ReplicatedDeployment shaped like the shared test topology, for the replication unit tests. */
import type { V1Node } from "@kubernetes/client-node";
import type { NamespaceOffloading, ReplicatedDeployment } from "../src/multicluster/index.js";

export const REGION = "topology.kubernetes.io/region";
export const PROVIDER = "tenantry.dev/provider";
export const SECURITY = "tenantry.dev/security-policy";

export function virtualNode(name: string, labels: Record<string, string>): V1Node {
  return { metadata: { name, labels: { "tenantry.dev/type": "virtual-node", ...labels } } };
}

export const EDGE_1 = virtualNode("tenantry-edge-1", {
  [REGION]: "eu-south",
  [PROVIDER]: "aws",
  [SECURITY]: "strict",
});
export const EDGE_2 = virtualNode("tenantry-edge-2", {
  [REGION]: "us-east",
  [PROVIDER]: "gcp",
  [SECURITY]: "standard",
});
/** Not in the shared topology: a second provider in edge-1's region. */
export const EDGE_3 = virtualNode("tenantry-edge-3", {
  [REGION]: "eu-south",
  [PROVIDER]: "gcp",
  [SECURITY]: "standard",
});

export function offloading(spec: NamespaceOffloading["spec"] = {}): NamespaceOffloading {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: "shop" },
    spec,
  };
}

export function replicatedDeployment(spec: Partial<ReplicatedDeployment["spec"]> = {}): ReplicatedDeployment {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "ReplicatedDeployment",
    metadata: { name: "web", namespace: "shop", uid: "0f6c1c7e-0000-4000-8000-000000000001", generation: 3 },
    spec: {
      template: {
        metadata: { labels: { tier: "front" } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
          },
        },
      },
      generationLabels: [REGION],
      ...spec,
    },
  };
}
