/**
 * RuntimeBackup and RuntimeRestore (namespaced, next to their Runtime): one backup of a runtime —
 * its metadata (the Runtime, its Secrets and ConfigMaps) and the data of its claims — in the
 * object store, and one restore of such a backup into a runtime. BackupPolicy (cluster-scoped,
 * per RuntimeService): when to back up, how many to keep, what to include, and what idle means.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";

export const BACKUP_PHASES = ["Pending", "Running", "Completed", "Failed"] as const;
export type BackupPhase = (typeof BACKUP_PHASES)[number];
export const BACKUP_TRIGGERS = ["Manual", "Scheduled", "Idle"] as const;
export const IDLE_ACTIONS = ["None", "Stop", "Delete"] as const;
export const KEY_SCOPES = ["Tenant", "Backup"] as const;
export type IdleAction = (typeof IDLE_ACTIONS)[number];

/** On a RuntimeBackup and its Jobs: the Runtime it is of. */
export const BACKUP_RUNTIME_LABEL = "tenantry.dev/backup-of";
/** On an agent Job: the backup or restore it runs for. */
export const BACKUP_NAME_LABEL = "tenantry.dev/backup";
export const RESTORE_NAME_LABEL = "tenantry.dev/restore";

/**
 * On a Runtime torn down while idle (policy action Delete), set before anything is removed: the
 * Idle backup being taken of it once it has stopped. Its claims, Secrets and ConfigMaps are removed
 * only when that backup is Completed (stored and verified).
 */
export const IDLE_TEARDOWN_ANNOTATION = "tenantry.dev/idle-teardown";
/**
 * On a Runtime whose claims, Secrets and ConfigMaps were removed after a verified backup: that
 * backup. Its next start restores them from it before it deploys (a start gate holds it), and
 * retention never deletes that backup.
 */
export const RESTORE_FROM_ANNOTATION = "tenantry.dev/restore-from";

const immutable = (field: string) => ({ rule: "self == oldSelf", message: `${field} is immutable` });

const IncludeSchema = Type.Object(
  {
    metadata: Type.Boolean({ description: "The Runtime object, its Secrets and ConfigMaps.", default: true }),
    volumes: Type.Boolean({ description: "The data of the runtime's claims.", default: true }),
  },
  { description: "What a backup holds." },
);

const VolumeRecordSchema = Type.Object(
  {
    claim: DnsSubdomain({ description: "The claim." }),
    key: Type.String({ description: "Its archive's object key.", maxLength: 1024 }),
    size: Type.Optional(Type.Integer({ description: "Bytes archived (before encryption).", minimum: 0 })),
    files: Type.Optional(Type.Integer({ description: "Files archived.", minimum: 0 })),
    sha256: Type.Optional(Type.String({ description: "SHA-256 of the archive.", maxLength: 64 })),
  },
  { description: "One claim's archive." },
);

export const RuntimeBackupSchema = ResourceSchema({
  description: "One backup of a runtime: metadata and volume data, encrypted, in the object store.",
  spec: Type.Object(
    {
      runtime: DnsLabel({
        description: "The Runtime (in this namespace) to back up.",
        "x-kubernetes-validations": [immutable("runtime")],
      }),
      trigger: Type.Optional(
        StringEnum(BACKUP_TRIGGERS, { description: "Why it was taken.", default: "Manual" }),
      ),
      include: Type.Optional(IncludeSchema),
    },
    { description: "What to back up." },
  ),
  status: Type.Object(
    {
      observedGeneration: ObservedGeneration(),
      phase: Type.Optional(StringEnum(BACKUP_PHASES, { description: "Where the backup is." })),
      reason: Type.Optional(Type.String({ description: "Why: one CamelCase word.", maxLength: 1024 })),
      message: Type.Optional(Type.String({ description: "Why, for people.", maxLength: 32768 })),
      location: Type.Optional(
        Type.String({
          description: "Its prefix in the store: tenant/user/service/instance/backup.",
          maxLength: 1024,
        }),
      ),
      tenant: Type.Optional(Type.String({ description: "The runtime's tenant.", maxLength: 63 })),
      keyScope: Type.Optional(
        StringEnum(KEY_SCOPES, {
          description:
            "The key it is encrypted under: `Backup`, its own (derived from the tenant's with HKDF-SHA256 over its location); absent or `Tenant`, the tenant's (backups taken before keys per backup).",
        }),
      ),
      startTime: Type.Optional(Type.String({ format: "date-time", description: "When it began." })),
      completionTime: Type.Optional(Type.String({ format: "date-time", description: "When it ended." })),
      metadataObjects: Type.Optional(
        Type.Integer({ description: "Objects in its metadata archive.", minimum: 0 }),
      ),
      volumes: Type.Optional(
        AtomicList(VolumeRecordSchema, { description: "Claims archived.", maxItems: 32 }),
      ),
      conditions: Type.Optional(ConditionList("`Completed`: the backup is in the store and verified.")),
    },
    { description: "Where the backup is." },
  ),
});
export type RuntimeBackup = Static<typeof RuntimeBackupSchema>;

export const RuntimeRestoreSchema = ResourceSchema({
  description: "One restore of a RuntimeBackup into its runtime: metadata first, then the claims' data.",
  spec: Type.Object(
    {
      backup: DnsSubdomain({
        description: "The RuntimeBackup (in this namespace) to restore.",
        "x-kubernetes-validations": [immutable("backup")],
      }),
      startAfter: Type.Optional(
        Type.Boolean({ description: "Start the runtime once its data is back.", default: false }),
      ),
    },
    { description: "What to restore." },
  ),
  status: Type.Object(
    {
      observedGeneration: ObservedGeneration(),
      phase: Type.Optional(StringEnum(BACKUP_PHASES, { description: "Where the restore is." })),
      reason: Type.Optional(Type.String({ description: "Why: one CamelCase word.", maxLength: 1024 })),
      message: Type.Optional(Type.String({ description: "Why, for people.", maxLength: 32768 })),
      startTime: Type.Optional(Type.String({ format: "date-time", description: "When it began." })),
      completionTime: Type.Optional(Type.String({ format: "date-time", description: "When it ended." })),
      conditions: Type.Optional(ConditionList("`Completed`: the runtime's data is back and verified.")),
    },
    { description: "Where the restore is." },
  ),
});
export type RuntimeRestore = Static<typeof RuntimeRestoreSchema>;

export const BackupPolicySchema = ResourceSchema({
  description:
    "When and what to back up of the runtimes of one RuntimeService, and what idle means for them.",
  spec: Type.Object(
    {
      service: DnsLabel({ description: "The RuntimeService whose runtimes this applies to." }),
      schedule: Type.Optional(
        Type.String({
          description: "Cron schedule (5 fields, UTC) of backups of every runtime of the service.",
          maxLength: 128,
        }),
      ),
      retention: Type.Integer({
        description: "Completed backups kept per runtime; older ones are deleted with their objects.",
        minimum: 1,
        maximum: 1000,
        default: 7,
      }),
      include: Type.Optional(IncludeSchema),
      idle: Type.Optional(
        Type.Object(
          {
            timeoutSeconds: Type.Integer({
              description: "No request through the proxy for this long makes a running runtime idle.",
              minimum: 60,
              maximum: 31_536_000,
            }),
            action: StringEnum(IDLE_ACTIONS, {
              description:
                "After a verified backup: Stop (claims kept), Delete (claims and objects removed; restored at the next start), None.",
              default: "Stop",
            }),
          },
          { description: "Idle teardown." },
        ),
      ),
    },
    { description: "The service's backup policy." },
  ),
  status: Type.Object(
    {
      observedGeneration: ObservedGeneration(),
      lastScheduleTime: Type.Optional(
        Type.String({ format: "date-time", description: "When scheduled backups were last made." }),
      ),
      conditions: Type.Optional(ConditionList("`Ready`: the policy is valid.")),
    },
    { description: "Where the policy is." },
  ),
});
export type BackupPolicy = Static<typeof BackupPolicySchema>;
