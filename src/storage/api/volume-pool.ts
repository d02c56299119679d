/**
 * VolumePool (cluster-scoped): a StorageClass served by tenantry's pooled provisioner, the sizes of
 * volume kept ready ahead of demand, and the backing stores the volumes are allocated on, filled in
 * turn (Vasilenko & Kurapati §4: the Supplier's pool and its mounts).
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  LabelValue,
  ListMap,
  ObservedGeneration,
  QUANTITY_PATTERN,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";
import { POOLED_PROVISIONER } from "./names.js";

export const ENCRYPTION_MODES = ["Required", "IfAvailable", "Disabled"] as const;
export type EncryptionMode = (typeof ENCRYPTION_MODES)[number];

export const BINDING_MODES = ["WaitForFirstConsumer", "Immediate"] as const;
export const RECLAIM_POLICIES = ["Delete", "Retain"] as const;

/** A size: a quantity string (e.g. `1Gi`) greater than zero. */
const Size = (description: string, field: string) =>
  Type.String({
    description,
    minLength: 1,
    maxLength: 32,
    pattern: QUANTITY_PATTERN,
    "x-kubernetes-validations": [
      {
        rule: "isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",
        message: `${field} must be a quantity greater than zero, e.g. 1Gi`,
      },
    ],
  });

export const BackingStoreSchema = Type.Object(
  {
    name: DnsLabel({ description: "Name of the store within the pool." }),
    path: Type.String({
      description:
        "Absolute folder on the node (or on a mount every node of the zone shares) that holds the volumes' sparse files and mount points.",
      minLength: 2,
      maxLength: 1024,
      pattern: "^/.*[^/]$",
      "x-kubernetes-validations": [
        {
          rule: "!self.contains('//') && !self.split('/').exists(s, s == '..' || s == '.')",
          message: "path must be absolute and plain: no '.' or '..' segments, no empty ones",
        },
      ],
    }),
    node: Type.Optional(
      DnsSubdomain({ description: "The node whose disk holds the store (exactly one of node or zone)." }),
    ),
    zone: Type.Optional(
      LabelValue(
        "The zone (topology.kubernetes.io/zone) whose nodes all mount the store at path (exactly one of node or zone).",
      ),
    ),
    capacity: Size(
      "How much volume size may be allocated on the store (sparse files take only what is written; this is the sum of their sizes). The store counts as exhausted beyond it, or when its disk is full.",
      "capacity",
    ),
  },
  {
    description: "A folder volumes are allocated on.",
    "x-kubernetes-validations": [
      {
        rule: "has(self.node) != has(self.zone)",
        message: "give exactly one of node or zone",
      },
    ],
  },
);
export type BackingStore = Static<typeof BackingStoreSchema>;

export const VolumePoolSpecSchema = Type.Object(
  {
    provisioner: Type.Optional(
      Type.String({
        description: `Provisioner name of the pool's StorageClass; a storage system of tenantry serves the pools of its own name (default ${POOLED_PROVISIONER}).`,
        minLength: 3,
        maxLength: 253,
        pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        default: POOLED_PROVISIONER,
      }),
    ),
    storageClass: Type.Object(
      {
        name: DnsSubdomain({
          description: "The StorageClass the pool serves; created and kept by the pool.",
        }),
        default: Type.Optional(
          Type.Boolean({ description: "Mark the class as the cluster's default StorageClass." }),
        ),
        volumeBindingMode: Type.Optional(
          StringEnum(BINDING_MODES, {
            description:
              "WaitForFirstConsumer (default) allocates on the node the scheduler chose for the claim's first pod; Immediate picks a store at once.",
            default: "WaitForFirstConsumer",
          }),
        ),
        reclaimPolicy: Type.Optional(
          StringEnum(RECLAIM_POLICIES, {
            description:
              "Delete (default): a released volume is scrubbed and goes back to the pool (or is destroyed); Retain keeps it with its data.",
            default: "Delete",
          }),
        ),
      },
      { description: "The StorageClass claims name to get volumes of this pool." },
    ),
    sizes: Type.Array(Size("A volume size kept ready, e.g. 1Gi.", "every size"), {
      description:
        "Sizes of the volumes kept ready. A claim gets the smallest size that holds its request; a claim larger than every size is allocated on demand at its own size.",
      minItems: 1,
      maxItems: 8,
      "x-kubernetes-list-type": "set",
    }),
    backingStores: ListMap(BackingStoreSchema, ["name"], {
      description:
        "Where volumes are allocated, filled in turn: the first store with room takes the next volume, the next one is taken when it is exhausted.",
      minItems: 1,
      maxItems: 32,
      "x-kubernetes-validations": [
        {
          rule: "self.all(a, self.exists_one(b, b.path == a.path && (has(a.node) ? has(b.node) && b.node == a.node : has(b.zone) && b.zone == a.zone)))",
          message: "two backing stores share one path on the same node or zone",
        },
      ],
    }),
    encryption: Type.Optional(
      StringEnum(ENCRYPTION_MODES, {
        description:
          "Required (default): every volume is encrypted per tenant with fscrypt, or none is made (the pool's Encrypted condition says why); IfAvailable: encrypted where the node can, plain otherwise (the condition says so); Disabled: never encrypted.",
        default: "Required",
      }),
    ),
    warm: Type.Optional(
      Type.Object(
        {
          min: Type.Optional(
            Type.Integer({
              description: "Volumes of each size kept ready whatever the forecast (default 1).",
              minimum: 0,
              maximum: 1000,
              default: 1,
            }),
          ),
          max: Type.Optional(
            Type.Integer({
              description: "Most volumes of one size kept ready (default 100).",
              minimum: 0,
              maximum: 10000,
              default: 100,
            }),
          ),
          forecastWindows: Type.Optional(
            Type.Integer({
              description:
                "How many forecast windows of demand to keep ready: target = ceil(forecast claims per window × this), between min and max (default 2).",
              minimum: 1,
              maximum: 100,
              default: 2,
            }),
          ),
        },
        {
          description: "How many volumes to keep ready for each size.",
          "x-kubernetes-validations": [
            {
              rule: "!has(self.min) || !has(self.max) || self.min <= self.max",
              message: "min must not exceed max",
              fieldPath: ".min",
            },
          ],
        },
      ),
    ),
  },
  { description: "The class a pool serves, its volume sizes and its backing stores." },
);
export type VolumePoolSpec = Static<typeof VolumePoolSpecSchema>;

export const PoolSizeStatusSchema = Type.Object(
  {
    size: Type.String({ description: "The volume size.", maxLength: 64 }),
    ready: Type.Integer({ description: "Volumes allocated and waiting for a claim.", minimum: 0 }),
    allocating: Type.Integer({ description: "Volumes being allocated.", minimum: 0 }),
    bound: Type.Integer({ description: "Volumes given to claims.", minimum: 0 }),
    failed: Type.Integer({ description: "Volumes that could not be allocated.", minimum: 0 }),
    target: Type.Integer({ description: "Volumes the supplier keeps ready now.", minimum: 0 }),
    forecast: Type.String({
      description: "The advisor's forecast of claims of this size per window (EWMA).",
      maxLength: 32,
    }),
  },
  { description: "One size of the pool." },
);

export const StoreStatusSchema = Type.Object(
  {
    name: Type.String({ description: "The backing store.", maxLength: 63 }),
    volumes: Type.Integer({ description: "Volumes allocated on it.", minimum: 0 }),
    allocated: Type.String({ description: "Sum of their sizes.", maxLength: 64 }),
    capacity: Type.String({ description: "The store's capacity.", maxLength: 64 }),
    exhausted: Type.Boolean({ description: "Whether it takes no more volumes." }),
    reason: Type.Optional(Type.String({ description: "Why it is exhausted.", maxLength: 1024 })),
  },
  { description: "One backing store of the pool." },
);

export const VolumePoolStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: the StorageClass is in place and every size has its target of ready volumes; `Encrypted`: volumes are encrypted per tenant (False names why not); `StoresAvailable`: some backing store has room.",
      ),
    ),
    sizes: Type.Optional(AtomicList(PoolSizeStatusSchema, { description: "Volumes per size.", maxItems: 8 })),
    stores: Type.Optional(
      AtomicList(StoreStatusSchema, { description: "Use of each backing store.", maxItems: 32 }),
    ),
  },
  { description: "Observed state of the pool, written by the supplier." },
);
export type VolumePoolStatus = Static<typeof VolumePoolStatusSchema>;

export const VolumePoolSchema = ResourceSchema({
  description:
    "A pool of pre-allocated (and per-tenant encrypted) volumes behind a StorageClass: claims of the class are bound at once to a ready volume, or to one allocated on demand.",
  spec: VolumePoolSpecSchema,
  status: VolumePoolStatusSchema,
});
export type VolumePool = Static<typeof VolumePoolSchema>;
