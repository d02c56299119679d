import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import {
  AGE_COLUMN,
  CRD_COMMON,
  READY_COLUMN,
  TENANTRY_GROUP,
  TENANTS_VERSION,
} from "../../tenants/index.js";
import { PooledVolumeSchema } from "./pooled-volume.js";
import { VolumePoolSchema } from "./volume-pool.js";

export const STORAGE_API_VERSION = `${TENANTRY_GROUP}/${TENANTS_VERSION}`;

export const VOLUME_POOL_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "VolumePool",
  plural: "volumepools",
  singular: "volumepool",
  shortNames: ["vpool"],
  schema: VolumePoolSchema,
  printerColumns: [
    {
      name: "Class",
      type: "string",
      jsonPath: ".spec.storageClass.name",
      description: "The StorageClass the pool serves.",
    },
    {
      name: "Encryption",
      type: "string",
      jsonPath: ".spec.encryption",
      description: "Encryption mode.",
    },
    {
      name: "Encrypted",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Encrypted")].status',
      description: "Whether volumes are encrypted.",
    },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Reason",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: "Reason of the Ready condition.",
      priority: 1,
    },
  ],
});

export const POOLED_VOLUME_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "PooledVolume",
  plural: "pooledvolumes",
  singular: "pooledvolume",
  shortNames: ["pvol"],
  schema: PooledVolumeSchema,
  printerColumns: [
    { name: "Pool", type: "string", jsonPath: ".spec.pool", description: "The VolumePool." },
    { name: "Size", type: "string", jsonPath: ".spec.size", description: "The volume's size." },
    { name: "Store", type: "string", jsonPath: ".spec.store.name", description: "The backing store." },
    { name: "Phase", type: "string", jsonPath: ".status.phase", description: "Where it is in its life." },
    {
      name: "Claim",
      type: "string",
      jsonPath: ".spec.claim.name",
      description: "The claim it is given to.",
    },
    {
      name: "Encrypted",
      type: "boolean",
      jsonPath: ".status.encrypted",
      description: "Whether its data is encrypted.",
    },
    AGE_COLUMN,
    {
      name: "Reason",
      type: "string",
      jsonPath: ".status.reason",
      description: "Why it is in its phase.",
      priority: 1,
    },
    {
      name: "Path",
      type: "string",
      jsonPath: ".status.dataPath",
      description: "The folder pods see.",
      priority: 1,
    },
  ],
});

export const STORAGE_CRDS: readonly CustomResourceDefinition[] = [VOLUME_POOL_CRD, POOLED_VOLUME_CRD];
