/**
 * The pod webhook of offloaded namespaces (Liqo thesis, 6.2.1): forces on each new pod the node
 * affinity and the virtual-node toleration its namespace's podOffloadingStrategy and
 * clusterSelector call for.
 */
import { isDeepStrictEqual } from "node:util";
import type { V1Affinity, V1Toleration } from "@kubernetes/client-node";
import { type AdmissionCheck, allow, deny, type JsonPatchOperation } from "../../webhooks/index.js";
import type { MulticlusterInformers } from "../informers.js";
import { OFFLOADED_NAMESPACE_LABEL } from "./labels.js";
import { placePod } from "./pod-placement.js";

interface PodObject {
  spec?: { affinity?: V1Affinity; tolerations?: V1Toleration[]; nodeName?: string };
}

export function offloadingPodWebhook(informers: MulticlusterInformers): AdmissionCheck {
  return {
    name: "pods.offloading.tenantry.dev",
    kind: "mutating",
    path: "/mutate/offloaded-pods",
    // Fail: a pod admitted unchanged in a Remote namespace would run locally, against the admin's choice.
    failurePolicy: "Fail",
    namespaceSelector: { matchLabels: { [OFFLOADED_NAMESPACE_LABEL]: "true" } },
    rules: [
      {
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE"],
        resources: ["pods"],
        scope: "Namespaced",
      },
    ],
    handle(request) {
      if (request.subResource || !request.namespace) return allow();
      const offloading = informers.offloadingOf(request.namespace);
      if (!offloading || offloading.metadata?.deletionTimestamp) return allow();
      const pod = request.object as PodObject;
      // Already bound (a reflected or static placement): the scheduler will not read affinity.
      if (pod.spec?.nodeName) return allow();
      const { placement, conflict } = placePod(offloading.spec, {
        ...(pod.spec?.affinity ? { affinity: pod.spec.affinity } : {}),
        ...(pod.spec?.tolerations ? { tolerations: pod.spec.tolerations } : {}),
      });
      if (conflict) return deny(`namespace ${request.namespace} is offloaded: ${conflict}`);
      const ops: JsonPatchOperation[] = [];
      if (!isDeepStrictEqual(placement.affinity, pod.spec?.affinity)) {
        ops.push({ op: "add", path: "/spec/affinity", value: placement.affinity });
      }
      if (!isDeepStrictEqual(placement.tolerations, pod.spec?.tolerations)) {
        ops.push({ op: "add", path: "/spec/tolerations", value: placement.tolerations });
      }
      return allow(ops.length ? ops : undefined);
    },
  };
}
