/**
 * Node objects labelled and tainted like tenantry's virtual nodes, with no peer behind them: the
 * replication controller only reads their labels, so tests and benchmarks can make many cheaply.
 */
import type { V1Node } from "@kubernetes/client-node";
import { NODE_TYPE_LABEL, VIRTUAL_NODE_TAINT, VIRTUAL_NODE_TYPE } from "../src/multicluster/index.js";

/** On each such node: the run it belongs to, so a run's selector leaves the real virtual nodes out. */
export const FAKE_NODE_RUN_LABEL = "tenantry.dev/fake-node-run";

export function fakeVirtualNodes(run: string, count: number): V1Node[] {
  return Array.from({ length: count }, (_, i) => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: `tenantry-fake-${run}-${i}`,
      labels: {
        [NODE_TYPE_LABEL]: VIRTUAL_NODE_TYPE,
        [FAKE_NODE_RUN_LABEL]: run,
        "kubernetes.io/hostname": `tenantry-fake-${run}-${i}`,
        "topology.kubernetes.io/region": `fake-region-${i}`,
        "tenantry.dev/provider": `fake-provider-${i % 3}`,
      },
    },
    spec: { taints: [VIRTUAL_NODE_TAINT] },
  }));
}
