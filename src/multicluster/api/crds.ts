import {
  type CustomResourceDefinition,
  customResourceDefinition,
  type PrinterColumn,
} from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { MCS_GROUP, MCS_VERSION, ServiceExportSchema, ServiceImportSchema } from "./mcs.js";
import { NamespaceMapSchema, NamespaceOffloadingSchema } from "./offloading.js";
import { PeeringSchema } from "./peering.js";
import { ReplicatedDeploymentSchema } from "./replicated-deployment.js";

const READY_REASON_COLUMN: PrinterColumn = {
  name: "Reason",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: "Reason of the Ready condition.",
  priority: 1,
};

export const PEERING_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "Peering",
  plural: "peerings",
  singular: "peering",
  shortNames: ["peer"],
  schema: PeeringSchema,
  printerColumns: [
    {
      name: "Remote ID",
      type: "string",
      jsonPath: ".spec.remoteClusterId",
      description: "Identity of the provider cluster.",
    },
    READY_COLUMN,
    {
      name: "Healthy",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Healthy")].status',
      description: "Whether the provider answered the last probe.",
    },
    {
      name: "Capacity",
      type: "string",
      jsonPath: ".status.capacitySummary",
      description: "Capacity the provider grants.",
    },
    {
      name: "Heartbeat",
      type: "date",
      jsonPath: ".status.lastHeartbeat",
      description: "When the provider last answered.",
    },
    AGE_COLUMN,
    {
      name: "Labels",
      type: "string",
      jsonPath: ".status.labelSummary",
      description: "The provider's cluster labels.",
      priority: 1,
    },
    READY_REASON_COLUMN,
  ],
});

export const NAMESPACE_OFFLOADING_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "NamespaceOffloading",
  plural: "namespaceoffloadings",
  singular: "namespaceoffloading",
  shortNames: ["nsoff"],
  schema: NamespaceOffloadingSchema,
  printerColumns: [
    {
      name: "Mapping",
      type: "string",
      jsonPath: ".spec.namespaceMappingStrategy",
      description: "How remote namespaces are named.",
    },
    {
      name: "Pods",
      type: "string",
      jsonPath: ".spec.podOffloadingStrategy",
      description: "Where the namespace's pods may run.",
    },
    {
      name: "Phase",
      type: "string",
      jsonPath: ".status.offloadingPhase",
      description: "State of the remote replicas.",
    },
    {
      name: "Remote namespace",
      type: "string",
      jsonPath: ".status.remoteNamespaceName",
      description: "Name of the namespace in the remote clusters.",
    },
    AGE_COLUMN,
    {
      name: "Message",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      description: "Which replicas are not ready, and why.",
      priority: 1,
    },
  ],
});

export const NAMESPACE_MAP_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "NamespaceMap",
  plural: "namespacemaps",
  singular: "namespacemap",
  shortNames: ["nsmap"],
  schema: NamespaceMapSchema,
  printerColumns: [
    {
      name: "Peer",
      type: "string",
      jsonPath: ".metadata.labels.tenantry\\.dev/peering",
      description: "The peered cluster.",
    },
    AGE_COLUMN,
  ],
});

export const REPLICATED_DEPLOYMENT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "ReplicatedDeployment",
  plural: "replicateddeployments",
  singular: "replicateddeployment",
  shortNames: ["rdeploy"],
  schema: ReplicatedDeploymentSchema,
  printerColumns: [
    {
      name: "Deployments",
      type: "integer",
      jsonPath: ".status.deploymentCount",
      description: "Replica Deployments wanted (one per combination).",
    },
    {
      name: "Available",
      type: "integer",
      jsonPath: ".status.availableDeploymentCount",
      description: "Replica Deployments that are Available.",
    },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Generation labels",
      type: "string",
      jsonPath: ".spec.generationLabels",
      description: "Label keys whose value combinations get one replica each.",
      priority: 1,
    },
    READY_REASON_COLUMN,
    {
      name: "Message",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      description: "Which replicas are not Available, and why.",
      priority: 1,
    },
  ],
});

/** The Multi-Cluster Services API's two kinds: group, version, names and columns as mcs-api v0.5.2 has them. */
const MCS_COMMON = {
  group: MCS_GROUP,
  version: MCS_VERSION,
  scope: "Namespaced",
  labels: { "app.kubernetes.io/part-of": "tenantry" },
} as const;

export const SERVICE_EXPORT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...MCS_COMMON,
  kind: "ServiceExport",
  plural: "serviceexports",
  singular: "serviceexport",
  shortNames: ["svcex", "svcexport"],
  schema: ServiceExportSchema,
  printerColumns: [AGE_COLUMN],
});

export const SERVICE_IMPORT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...MCS_COMMON,
  kind: "ServiceImport",
  plural: "serviceimports",
  singular: "serviceimport",
  shortNames: ["svcim", "svcimport"],
  schema: ServiceImportSchema,
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type", description: "The type of this ServiceImport" },
    { name: "IP", type: "string", jsonPath: ".spec.ips", description: "The VIP for this ServiceImport" },
    AGE_COLUMN,
  ],
});

export const MULTICLUSTER_CRDS: readonly CustomResourceDefinition[] = [
  PEERING_CRD,
  NAMESPACE_OFFLOADING_CRD,
  NAMESPACE_MAP_CRD,
  REPLICATED_DEPLOYMENT_CRD,
  SERVICE_EXPORT_CRD,
  SERVICE_IMPORT_CRD,
];
