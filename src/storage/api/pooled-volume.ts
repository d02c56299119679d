/**
 * PooledVolume (cluster-scoped): one volume of a pool — where its sparse file lives, its size, the
 * claim it is given to — and what the node agent made of it (Vasilenko & Kurapati §4: the sparse file
 * metadata kept in Kubernetes resources).
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  LabelValue,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";
import { ENCRYPTION_MODES } from "./volume-pool.js";

export const VOLUME_PHASES = ["Allocating", "Available", "Bound", "Failed"] as const;
export type VolumePhase = (typeof VOLUME_PHASES)[number];

/** How a volume is made: an ext4 filesystem in a loop-mounted sparse file, or a plain folder (no size limit, no encryption). */
export const VOLUME_FORMATS = ["LoopExt4", "Directory"] as const;
export type VolumeFormat = (typeof VOLUME_FORMATS)[number];

export const ClaimRefSchema = Type.Object(
  {
    namespace: DnsLabel({ description: "The claim's namespace." }),
    name: DnsSubdomain({ description: "The claim's name." }),
    uid: Type.String({ description: "The claim's uid.", minLength: 1, maxLength: 64 }),
    keyOwner: Type.String({
      description:
        "Whose key encrypts the volume: `tenant.<name>` for a claim in a tenant's namespace, `namespace.<name>` otherwise.",
      minLength: 1,
      maxLength: 80,
    }),
    keySecretName: DnsSubdomain({ description: "Secret in tenantry's namespace holding that key." }),
  },
  { description: "The claim a volume is given to." },
);
export type ClaimRef = Static<typeof ClaimRefSchema>;

export const PooledVolumeSpecSchema = Type.Object(
  {
    provisioner: Type.String({ description: "Provisioner name of the pool.", maxLength: 253 }),
    pool: DnsSubdomain({ description: "The VolumePool the volume belongs to." }),
    storageClassName: DnsSubdomain({ description: "The pool's StorageClass." }),
    store: Type.Object(
      {
        name: DnsLabel({ description: "The backing store within the pool." }),
        path: Type.String({ description: "The store's folder.", minLength: 2, maxLength: 1024 }),
        node: Type.Optional(DnsSubdomain({ description: "The store's node." })),
        zone: Type.Optional(LabelValue("The store's zone.")),
      },
      { description: "Where the volume's files are (copied from the pool when the volume was made)." },
    ),
    size: Type.String({ description: "The volume's size (a quantity).", maxLength: 64 }),
    encryption: StringEnum(ENCRYPTION_MODES, { description: "The pool's encryption mode." }),
    claim: Type.Optional(ClaimRefSchema),
  },
  { description: "Where the volume is and who it is given to." },
);
export type PooledVolumeSpec = Static<typeof PooledVolumeSpecSchema>;

export const PooledVolumeStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    phase: Type.Optional(
      StringEnum(VOLUME_PHASES, {
        description:
          "Allocating: the node agent is making it; Available: ready for a claim; Bound: prepared for its claim; Failed: it could not be made (reason says why).",
      }),
    ),
    reason: Type.Optional(Type.String({ description: "Why the volume is in its phase.", maxLength: 128 })),
    message: Type.Optional(Type.String({ description: "Details.", maxLength: 4096 })),
    format: Type.Optional(StringEnum(VOLUME_FORMATS, { description: "How the volume is made." })),
    encrypted: Type.Optional(
      Type.Boolean({ description: "Whether the volume's data folder is encrypted (fscrypt)." }),
    ),
    dataPath: Type.Optional(
      Type.String({
        description: "The folder pods see: the PersistentVolume's local path.",
        maxLength: 1200,
      }),
    ),
    preparedFor: Type.Optional(
      Type.String({
        description: "uid of the claim the data folder was prepared (and keyed) for.",
        maxLength: 64,
      }),
    ),
    conditions: Type.Optional(
      ConditionList(
        "`Allocated`: the sparse file (or folder) exists and is formatted; `Encrypted`: the data folder is encrypted with the claim's key; `Attached`: the data folder is mounted and unlocked for the claim.",
      ),
    ),
  },
  { description: "What the node agent made of the volume." },
);
export type PooledVolumeStatus = Static<typeof PooledVolumeStatusSchema>;

export const PooledVolumeSchema = ResourceSchema({
  description:
    "One volume of a VolumePool: a sparse file on a backing store, formatted and mounted by the node agent, encrypted per tenant, given to at most one claim.",
  spec: PooledVolumeSpecSchema,
  status: PooledVolumeStatusSchema,
});
export type PooledVolume = Static<typeof PooledVolumeSchema>;
