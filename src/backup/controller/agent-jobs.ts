import type { KubernetesObject, V1Job, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import type { ClusterClient } from "../../kube/index.js";
import { isNotFound } from "../../kube/index.js";
import { fitLabel, type RuntimeService } from "../../runtimes/index.js";
import { AGENT_ENV, AGENT_MOUNT_PATH } from "../agent/env.js";
import type { S3Settings } from "../store/s3.js";

/** On every agent Job (and so its pods): watched by the backup controllers. */
export const AGENT_JOB_LABEL = "tenantry.dev/backup-agent";

export interface AgentJobOptions {
  mode: "backup" | "restore";
  name: string;
  namespace: string;
  claim: string;
  key: string;
  image: string;
  secret: string;
  /** The backup or restore it runs for (owner and label). */
  owner: KubernetesObject;
  ownerLabel: string;
  /** Where the runtime's pods run: the agent runs there too (the claim may be bound to a node there). */
  pods?: RuntimeService["spec"]["pods"];
}

/** The agent Secret: the store's endpoint and credentials and the tenant's key, for envFrom. */
export function agentSecret(
  name: string,
  namespace: string,
  store: S3Settings,
  tenantKey: Buffer,
  owner: KubernetesObject,
): KubernetesObject & { stringData: Record<string, string> } {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels: { [AGENT_JOB_LABEL]: "true" }, ownerReferences: [ownerRef(owner)] },
    type: "Opaque",
    stringData: {
      [AGENT_ENV.endpoint]: store.endpoint,
      [AGENT_ENV.bucket]: store.bucket,
      [AGENT_ENV.region]: store.region ?? "us-east-1",
      [AGENT_ENV.accessKeyId]: store.accessKeyId,
      [AGENT_ENV.secretAccessKey]: store.secretAccessKey,
      [AGENT_ENV.tenantKey]: tenantKey.toString("base64"),
    },
  } as KubernetesObject & { stringData: Record<string, string> };
}

function ownerRef(owner: KubernetesObject) {
  return {
    apiVersion: owner.apiVersion!,
    kind: owner.kind!,
    name: owner.metadata!.name!,
    uid: owner.metadata!.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** One agent Job: mounts the claim at /data and runs `backup|restore --dir /data --key <key>` once. */
export function agentJob(options: AgentJobOptions): V1Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: options.name,
      namespace: options.namespace,
      labels: { [AGENT_JOB_LABEL]: "true", [options.ownerLabel]: fitLabel(options.owner.metadata!.name!) },
      ownerReferences: [ownerRef(options.owner)],
    },
    spec: {
      // A failed run is reported, not retried: the controller says why and nothing was replaced.
      backoffLimit: 0,
      template: {
        metadata: {
          labels: {
            [AGENT_JOB_LABEL]: "true",
            [options.ownerLabel]: fitLabel(options.owner.metadata!.name!),
          },
        },
        spec: {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          ...(options.pods?.nodeSelector ? { nodeSelector: options.pods.nodeSelector } : {}),
          ...(options.pods?.tolerations ? { tolerations: options.pods.tolerations as never } : {}),
          ...(options.pods?.priorityClassName ? { priorityClassName: options.pods.priorityClassName } : {}),
          securityContext: { seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name: "agent",
              image: options.image,
              args: [options.mode, "--dir", AGENT_MOUNT_PATH, "--key", options.key],
              envFrom: [{ secretRef: { name: options.secret } }],
              volumeMounts: [{ name: "data", mountPath: AGENT_MOUNT_PATH }],
              resources: {
                requests: { cpu: "50m", memory: "64Mi" },
                limits: { cpu: "1", memory: "512Mi" },
              },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
            },
          ],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: options.claim } }],
        },
      },
    },
  };
}

export type JobOutcome = { state: "running" } | { state: "succeeded" } | { state: "failed"; message: string };

/** Where an agent Job is; a failed one's reason is the agent's last `error:` line, else how its pod ended. */
export async function jobOutcome(client: ClusterClient, job: V1Job): Promise<JobOutcome> {
  if ((job.status?.succeeded ?? 0) > 0) return { state: "succeeded" };
  const failedCondition = job.status?.conditions?.find((c) => c.type === "Failed" && c.status === "True");
  if (!failedCondition && (job.status?.failed ?? 0) === 0) return { state: "running" };
  const namespace = job.metadata!.namespace!;
  const pods = await client.core.listNamespacedPod({
    namespace,
    labelSelector: `batch.kubernetes.io/job-name=${job.metadata!.name}`,
  });
  const pod = pods.items[0] as V1Pod | undefined;
  const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
  if (pod) {
    try {
      const log = await client.core.readNamespacedPodLog({
        name: pod.metadata!.name!,
        namespace,
        container: "agent",
        tailLines: 20,
      });
      const error = String(log)
        .split("\n")
        .reverse()
        .find((line) => line.startsWith("error: "));
      if (error) return { state: "failed", message: error.slice("error: ".length) };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  const how = terminated
    ? `exit code ${terminated.exitCode}${terminated.signal ? `, signal ${terminated.signal}` : ""}${terminated.reason ? ` (${terminated.reason})` : ""}`
    : (failedCondition?.message ?? "no pod");
  return { state: "failed", message: `the agent ended before finishing: ${how}` };
}

/** The claim as it was, for re-creating it on a restore (no binding, no status). */
export function claimTemplate(claim: V1PersistentVolumeClaim): V1PersistentVolumeClaim {
  const { volumeName: _volumeName, ...spec } = claim.spec ?? {};
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claim.metadata!.name!,
      namespace: claim.metadata!.namespace!,
      ...(claim.metadata?.labels ? { labels: claim.metadata.labels } : {}),
    },
    spec,
  };
}
