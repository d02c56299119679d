/**
 * What one backup agent may do in the store, decided from the pod whose token it presented:
 * pod → its Job (controller reference, same UID) → the RuntimeBackup or RuntimeRestore that owns
 * the Job (same UID), which must be Running → the one claim that Job is for → the keys of that
 * claim's archive and its record. A backup's agent reads and writes those two keys; a restore's
 * only reads them. Nothing else: no listing, no other key, nothing once the backup has ended.
 */
import type { KubernetesObject, V1Job, V1Pod } from "@kubernetes/client-node";
import { recordKey } from "../agent/volume.js";
import type { RuntimeBackup, RuntimeRestore } from "../api/backup.js";
import { AGENT_JOB_LABEL } from "../controller/agent-jobs.js";
import { agentJobName } from "../controller/layout.js";

export interface AgentGrant {
  kind: "RuntimeBackup" | "RuntimeRestore";
  /** `namespace/name` of the backup or restore. */
  owner: string;
  /** The claim's archive and its record: the only keys it may reach. */
  keys: readonly string[];
  /** A backup's agent writes; a restore's only reads. */
  writes: boolean;
}

export type GrantResult = { ok: true; grant: AgentGrant } | { ok: false; status: 403; detail: string };

/** Where the objects a grant is decided from are read (caches, read through on a miss). */
export interface GrantSources {
  job(namespace: string, name: string): Promise<V1Job | undefined>;
  backup(namespace: string, name: string): Promise<RuntimeBackup | undefined>;
  restore(namespace: string, name: string): Promise<RuntimeRestore | undefined>;
}

const refuse = (detail: string): GrantResult => ({ ok: false, status: 403, detail });

function controllerOf(obj: KubernetesObject) {
  return obj.metadata?.ownerReferences?.find((ref) => ref.controller);
}

/** The grant of the agent running in `pod` (in `namespace`), or why it has none. */
export async function grantOf(pod: V1Pod, namespace: string, sources: GrantSources): Promise<GrantResult> {
  const podName = `${namespace}/${pod.metadata?.name}`;
  const jobRef = controllerOf(pod);
  if (jobRef?.kind !== "Job" || jobRef.apiVersion !== "batch/v1")
    return refuse(`pod ${podName} is no backup agent: no Job controls it`);
  if (pod.status?.phase !== "Running" && pod.status?.phase !== "Pending")
    return refuse(`pod ${podName} has ended (${pod.status?.phase})`);
  const job = await sources.job(namespace, jobRef.name);
  if (!job || job.metadata?.uid !== jobRef.uid || job.metadata?.labels?.[AGENT_JOB_LABEL] !== "true")
    return refuse(
      `pod ${podName} is no backup agent: Job ${jobRef.name} is not one of tenantry's agent Jobs`,
    );
  const ownerRef = controllerOf(job);
  const kind = ownerRef?.kind;
  if (!ownerRef || (kind !== "RuntimeBackup" && kind !== "RuntimeRestore"))
    return refuse(`Job ${namespace}/${jobRef.name} belongs to no RuntimeBackup or RuntimeRestore`);
  const owner =
    kind === "RuntimeBackup"
      ? await sources.backup(namespace, ownerRef.name)
      : await sources.restore(namespace, ownerRef.name);
  const ownerName = `${kind} ${namespace}/${ownerRef.name}`;
  if (!owner || owner.metadata?.uid !== ownerRef.uid) return refuse(`${ownerName} is gone`);
  if (owner.status?.phase !== "Running")
    return refuse(
      `${ownerName} is ${owner.status?.phase ?? "Pending"}: its agents may reach the store only while it runs`,
    );
  const backup =
    kind === "RuntimeBackup"
      ? (owner as RuntimeBackup)
      : await sources.backup(namespace, (owner as RuntimeRestore).spec.backup);
  const volumes = backup?.status?.volumes ?? [];
  const index = volumes.findIndex((_, i) => agentJobName(ownerRef.name, i) === jobRef.name);
  const volume = volumes[index];
  const location = backup?.status?.location;
  if (!volume || !location || !volume.key.startsWith(`${location}/`))
    return refuse(`Job ${namespace}/${jobRef.name} is the agent of no claim of ${ownerName}`);
  return {
    ok: true,
    grant: {
      kind,
      owner: `${namespace}/${ownerRef.name}`,
      keys: [volume.key, recordKey(volume.key)],
      writes: kind === "RuntimeBackup",
    },
  };
}
