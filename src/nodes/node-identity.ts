/**
 * What a worker node's own identity may do. The owner of a WorkerNode is root on its machine and so
 * holds its kubelet certificate (`system:node:<name>`); that identity must stay inside its tenant:
 * - it creates no pods at all. NodeRestriction already limits a kubelet to mirror pods bound to
 *   itself, but in any namespace: one in another tenant's namespace became an endpoint of that
 *   tenant's Service and counted against its quota, one in kube-system ran as the cluster's own.
 *   Even in its owner's tenant a mirror pod is the machine's word (any labels, so any Service of
 *   the tenant's other members), and tenantry's join runs no static pods: so every pod a
 *   tenant-owned node's identity creates is refused, not only those outside its tenant. Static
 *   pods still run on the machine; they are only not mirrored into the cluster.
 * - it registers its Node only with the labels and taints tenantry gave it, and changes neither
 *   afterwards (see registration.ts).
 * Which nodes are tenant-owned comes from the informers (the WorkerNode of that name).
 */
import type { V1Node } from "@kubernetes/client-node";
import type { TenantInformers } from "../tenants/index.js";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
} from "../webhooks/index.js";
import { podRule } from "./admission.js";
import type { WorkerNode } from "./api/worker-node.js";
import type { NodeInformers } from "./informers.js";
import { nodeRegistration, nodeUpdateViolation, registrationViolation } from "./registration.js";

const NODE_USER_PREFIX = "system:node:";
const FORBIDDEN = 403;

/** CEL: the request comes from a kubelet's identity. */
const FROM_A_NODE = {
  name: "from-a-node",
  expression: `request.userInfo.username.startsWith('${NODE_USER_PREFIX}')`,
};

/** CEL: a Node is created, or its labels or taints change (a heartbeat does neither). */
const NODE_REGISTRATION_CHANGES = {
  name: "registers-or-relabels",
  expression:
    "request.operation == 'CREATE' || (has(object.metadata.labels) ? object.metadata.labels : {}) != (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) || (has(object.spec.taints) ? object.spec.taints : []) != (has(oldObject.spec.taints) ? oldObject.spec.taints : [])",
};

export class NodeIdentityAdmission {
  constructor(
    private readonly informers: NodeInformers,
    private readonly tenants: TenantInformers,
  ) {}

  webhooks(): AdmissionCheck[] {
    return [
      {
        name: "pods-from-worker-nodes.nodes.tenantry.dev",
        kind: "validating",
        path: "/validate/pods/from-worker-nodes",
        // Fail for every node, kube-system included: an outage only delays mirror pods (the
        // static pods themselves run), while a tenant's node must never get one in.
        failurePolicy: "Fail",
        everywhere: true,
        rules: [podRule(["CREATE"])],
        matchConditions: [FROM_A_NODE],
        handle: (request) => this.guardPod(request),
      },
      {
        name: "worker-node-registration.nodes.tenantry.dev",
        kind: "validating",
        path: "/validate/nodes/worker-node-registration",
        // Fail: a node registering untainted, or with another tenant's pool label, would draw
        // other users' pods to a machine its owner is root on. Heartbeats are not sent here.
        failurePolicy: "Fail",
        everywhere: true,
        rules: [
          {
            apiGroups: [""],
            apiVersions: ["v1"],
            operations: ["CREATE", "UPDATE"],
            resources: ["nodes", "nodes/status"],
            scope: "Cluster",
          },
        ],
        matchConditions: [FROM_A_NODE, NODE_REGISTRATION_CHANGES],
        handle: (request) => this.guardNode(request),
      },
    ];
  }

  /** The WorkerNode whose kubelet identity made the request, if it is one. */
  private workerNodeOf(request: AdmissionRequest): WorkerNode | undefined {
    const username = request.userInfo.username ?? "";
    if (!username.startsWith(NODE_USER_PREFIX)) return undefined;
    return this.informers.workerNodes.get(undefined, username.slice(NODE_USER_PREFIX.length));
  }

  guardPod(request: AdmissionRequest): AdmissionDecision {
    const node = this.workerNodeOf(request);
    if (!node) return allow();
    return deny(
      `metadata.annotations[kubernetes.io/config.mirror]: worker node "${node.metadata!.name}" of tenant "${node.spec.tenant ?? ""}" creates no pods (its static pods run on the machine, unmirrored); pods of the tenant are created by its users`,
      FORBIDDEN,
    );
  }

  guardNode(request: AdmissionRequest): AdmissionDecision {
    const workerNode = this.workerNodeOf(request);
    if (!workerNode) return allow();
    const after = request.object as V1Node;
    const violation =
      request.operation === "CREATE"
        ? registrationViolation(
            after,
            nodeRegistration(
              workerNode,
              workerNode.spec.tenant
                ? this.tenants.tenants.get(undefined, workerNode.spec.tenant)
                : undefined,
            ),
          )
        : nodeUpdateViolation(request.oldObject as V1Node, after);
    return violation ? deny(violation, FORBIDDEN) : allow();
  }
}
