import type { V1Job } from "@kubernetes/client-node";
import type { Informer, InformerCache } from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { RuntimeBackup, RuntimeRestore } from "./api/backup.js";
import { AGENT_JOB_LABEL } from "./controller/agent-jobs.js";

/** The backup objects and the agents' Jobs, as both the controllers and the agents' broker watch them. */
export interface BackupInformers {
  backups: Informer<RuntimeBackup>;
  restores: Informer<RuntimeRestore>;
  jobs: Informer<V1Job>;
}

export function backupInformers(cache: InformerCache): BackupInformers {
  return {
    backups: cache.informer<RuntimeBackup>({ apiVersion: TENANTS_API_VERSION, kind: "RuntimeBackup" }),
    restores: cache.informer<RuntimeRestore>({ apiVersion: TENANTS_API_VERSION, kind: "RuntimeRestore" }),
    jobs: cache.informer<V1Job>({
      apiVersion: "batch/v1",
      kind: "Job",
      labelSelector: `${AGENT_JOB_LABEL}=true`,
    }),
  };
}
