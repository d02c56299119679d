import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { BackupPolicySchema, RuntimeBackupSchema, RuntimeRestoreSchema } from "./backup.js";

const PHASE = {
  name: "Phase",
  type: "string",
  jsonPath: ".status.phase",
  description: "Where it is.",
} as const;
const REASON = {
  name: "Reason",
  type: "string",
  jsonPath: ".status.reason",
  description: "Why.",
  priority: 1,
} as const;

export const RUNTIME_BACKUP_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "RuntimeBackup",
  plural: "runtimebackups",
  singular: "runtimebackup",
  shortNames: ["rtbk"],
  schema: RuntimeBackupSchema,
  printerColumns: [
    { name: "Runtime", type: "string", jsonPath: ".spec.runtime", description: "The runtime backed up." },
    PHASE,
    { name: "Trigger", type: "string", jsonPath: ".spec.trigger", description: "Why it was taken." },
    AGE_COLUMN,
    REASON,
    {
      name: "Location",
      type: "string",
      jsonPath: ".status.location",
      description: "Prefix in the store.",
      priority: 1,
    },
  ],
});

export const RUNTIME_RESTORE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "RuntimeRestore",
  plural: "runtimerestores",
  singular: "runtimerestore",
  shortNames: ["rtrs"],
  schema: RuntimeRestoreSchema,
  printerColumns: [
    { name: "Backup", type: "string", jsonPath: ".spec.backup", description: "The backup restored." },
    PHASE,
    AGE_COLUMN,
    REASON,
  ],
});

export const BACKUP_POLICY_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "BackupPolicy",
  plural: "backuppolicies",
  singular: "backuppolicy",
  shortNames: ["bkp"],
  schema: BackupPolicySchema,
  printerColumns: [
    { name: "Service", type: "string", jsonPath: ".spec.service", description: "The RuntimeService." },
    { name: "Schedule", type: "string", jsonPath: ".spec.schedule", description: "Cron schedule." },
    { name: "Retention", type: "integer", jsonPath: ".spec.retention", description: "Backups kept." },
    READY_COLUMN,
    AGE_COLUMN,
  ],
});

export const BACKUP_CRDS: readonly CustomResourceDefinition[] = [
  RUNTIME_BACKUP_CRD,
  RUNTIME_RESTORE_CRD,
  BACKUP_POLICY_CRD,
];
