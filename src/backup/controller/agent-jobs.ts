import { basename, dirname } from "node:path";
import type { KubernetesObject, V1Job, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import type { ClusterClient } from "../../kube/index.js";
import { isNotFound } from "../../kube/index.js";
import { fitLabel, type RuntimeService } from "../../runtimes/index.js";
import { AGENT_ENV, AGENT_MOUNT_PATH, AGENT_TOKEN_PATH, BACKUP_AGENT_AUDIENCE } from "../agent/env.js";

/** On every agent Job (and so its pods): watched by the backup controllers. */
export const AGENT_JOB_LABEL = "tenantry.dev/backup-agent";

export interface AgentJobOptions {
  mode: "backup" | "restore";
  name: string;
  namespace: string;
  claim: string;
  key: string;
  /** A restore: the archive's SHA-256 as the backup recorded it. */
  sha256?: string;
  image: string;
  secret: string;
  /** The backup or restore it runs for (owner and label). */
  owner: KubernetesObject;
  ownerLabel: string;
  /** Where the runtime's pods run: the agent runs there too (the claim may be bound to a node there). */
  pods?: RuntimeService["spec"]["pods"];
}

/** How long the agent's token lives (the kubelet renews it at 80 %; the agent reads it each time). */
const AGENT_TOKEN_SECONDS = 3600;

/**
 * The agent Secret, for envFrom: the broker's URL and the key of this one backup — nothing of the
 * store (the broker presigns each request for the agent's pod).
 */
export function agentSecret(
  name: string,
  namespace: string,
  brokerUrl: string,
  backupKey: Buffer,
  owner: KubernetesObject,
): KubernetesObject & { stringData: Record<string, string> } {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels: { [AGENT_JOB_LABEL]: "true" }, ownerReferences: [ownerRef(owner)] },
    type: "Opaque",
    stringData: {
      [AGENT_ENV.brokerUrl]: brokerUrl,
      [AGENT_ENV.backupKey]: backupKey.toString("base64"),
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
          // No token for the API server; one for the broker alone, bound to this pod.
          automountServiceAccountToken: false,
          ...(options.pods?.nodeSelector ? { nodeSelector: options.pods.nodeSelector } : {}),
          ...(options.pods?.tolerations ? { tolerations: options.pods.tolerations as never } : {}),
          ...(options.pods?.priorityClassName ? { priorityClassName: options.pods.priorityClassName } : {}),
          securityContext: { seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name: "agent",
              image: options.image,
              args: [
                options.mode,
                "--dir",
                AGENT_MOUNT_PATH,
                "--key",
                options.key,
                "--token-file",
                AGENT_TOKEN_PATH,
                ...(options.sha256 ? ["--sha256", options.sha256] : []),
              ],
              envFrom: [{ secretRef: { name: options.secret } }],
              volumeMounts: [
                { name: "data", mountPath: AGENT_MOUNT_PATH },
                { name: "broker-token", mountPath: dirname(AGENT_TOKEN_PATH), readOnly: true },
              ],
              resources: {
                requests: { cpu: "50m", memory: "64Mi" },
                limits: { cpu: "1", memory: "512Mi" },
              },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
            },
          ],
          volumes: [
            { name: "data", persistentVolumeClaim: { claimName: options.claim } },
            {
              name: "broker-token",
              projected: {
                sources: [
                  {
                    serviceAccountToken: {
                      audience: BACKUP_AGENT_AUDIENCE,
                      expirationSeconds: AGENT_TOKEN_SECONDS,
                      path: basename(AGENT_TOKEN_PATH),
                    },
                  },
                ],
              },
            },
          ],
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
