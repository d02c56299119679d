/**
 * The Multi-Cluster Services API (KEP-1645), `multicluster.x-k8s.io/v1alpha1` as
 * `sigs.k8s.io/mcs-api` v0.5.2 defines it: ServiceExport (a user's wish that the Service of the
 * same name be consumable from the other clusters of the clusterset) and ServiceImport (what the
 * implementation makes in every consuming cluster). Same group, version, fields, enums, list types
 * and status conditions, so that any consumer of the API (CoreDNS's `kubernetes` plugin with
 * `multicluster`, kubectl, other tools) reads tenantry's objects as its own.
 */
import type { V1ObjectMeta } from "@kubernetes/client-node";
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { AtomicList, ConditionList, ListMap, StringEnum, StringMap } from "../../apis/index.js";

export const MCS_GROUP = "multicluster.x-k8s.io";
export const MCS_VERSION = "v1alpha1";
export const MCS_API_VERSION = `${MCS_GROUP}/${MCS_VERSION}`;

/** On imported EndpointSlices: the multi-cluster service they belong to (mcs-api `LabelServiceName`). */
export const MCS_SERVICE_NAME_LABEL = "multicluster.kubernetes.io/service-name";
/** On imported EndpointSlices: the cluster whose endpoints they carry (mcs-api `LabelSourceCluster`). */
export const MCS_SOURCE_CLUSTER_LABEL = "multicluster.kubernetes.io/source-cluster";

/** ServiceExport condition types and reasons (mcs-api v0.5.2 `serviceexport.go`). */
export const EXPORT_CONDITIONS = { valid: "Valid", ready: "Ready", conflict: "Conflict" } as const;
export const EXPORT_REASONS = {
  valid: "Valid",
  noService: "NoService",
  invalidServiceType: "InvalidServiceType",
  exported: "Exported",
  pending: "Pending",
  failed: "Failed",
  portConflict: "PortConflict",
  typeConflict: "TypeConflict",
  noConflicts: "NoConflicts",
} as const;

export const SERVICE_IMPORT_TYPES = ["ClusterSetIP", "Headless"] as const;
export type ServiceImportType = (typeof SERVICE_IMPORT_TYPES)[number];

/** The root of an MCS object: spec is optional there (unlike tenantry's own kinds). */
function mcsResource<Spec extends TSchema, Status extends TSchema>(
  description: string,
  spec: Spec,
  status: Status,
) {
  return Type.Object(
    {
      apiVersion: Type.Optional(Type.String({ description: "Versioned schema of this object." })),
      kind: Type.Optional(Type.String({ description: "Kind of this object." })),
      // The API server owns metadata's schema.
      metadata: Type.Optional(Type.Unsafe<V1ObjectMeta>(Type.Object({}))),
      spec: Type.Optional(spec),
      status: Type.Optional(status),
    },
    { description },
  );
}

export const ServiceExportSchema = mcsResource(
  "ServiceExport declares that the Service with the same name and namespace as this export should be consumable from other clusters.",

  Type.Object(
    {
      exportedLabels: Type.Optional(
        StringMap(Type.String(), {
          description: "exportedLabels describes the labels exported. It is optional for implementation.",
        }),
      ),
      exportedAnnotations: Type.Optional(
        StringMap(Type.String(), {
          description:
            "exportedAnnotations describes the annotations exported. It is optional for implementation.",
        }),
      ),
    },
    { description: "spec defines the behavior of a ServiceExport." },
  ),
  Type.Object(
    {
      conditions: Type.Optional(
        ConditionList("Valid, Ready and Conflict, as the multi-cluster services controller sees the export."),
      ),
    },
    { description: "status describes the current state of an exported service." },
  ),
);
export type ServiceExport = Static<typeof ServiceExportSchema>;

export const ServiceImportPortSchema = Type.Object({
  name: Type.Optional(
    Type.String({ description: "The name of this port within the service (a DNS_LABEL)." }),
  ),
  protocol: Type.Optional(
    Type.String({ description: 'The IP protocol for this port: "TCP", "UDP" or "SCTP".' }),
  ),
  appProtocol: Type.Optional(Type.String({ description: "The application protocol for this port." })),
  port: Type.Integer({ description: "The port that will be exposed by this service.", format: "int32" }),
});
export type ServiceImportPort = Static<typeof ServiceImportPortSchema>;

export const ServiceImportSpecSchema = Type.Object(
  {
    ports: AtomicList(ServiceImportPortSchema, {
      description: "Ports of the multi-cluster service.",
      maxItems: 100,
    }),
    ips: Type.Optional(
      Type.Array(Type.String(), {
        description: "ip will be used as the VIP for this service when type is ClusterSetIP.",
        maxItems: 2,
      }),
    ),
    type: StringEnum(SERVICE_IMPORT_TYPES, {
      description: "type defines the type of this service. Must be ClusterSetIP or Headless.",
    }),
    sessionAffinity: Type.Optional(
      Type.String({ description: 'Supports "ClientIP" and "None". Ignored when type is Headless.' }),
    ),
    sessionAffinityConfig: Type.Optional(
      Type.Object(
        {
          clientIP: Type.Optional(
            Type.Object({
              timeoutSeconds: Type.Optional(Type.Integer({ format: "int32" })),
            }),
          ),
        },
        { description: "sessionAffinityConfig contains session affinity configuration." },
      ),
    ),
    ipFamilies: Type.Optional(
      Type.Array(Type.String(), {
        description: "IPFamilies identifies all the IPFamilies assigned for this ServiceImport.",
        maxItems: 2,
      }),
    ),
    internalTrafficPolicy: Type.Optional(
      Type.String({ description: "How nodes distribute service traffic they receive on the ClusterIP." }),
    ),
    trafficDistribution: Type.Optional(
      Type.String({ description: "A preference for how traffic is distributed to the endpoints." }),
    ),
  },
  { description: "spec defines the behavior of a ServiceImport." },
);
export type ServiceImportSpec = Static<typeof ServiceImportSpecSchema>;

export const ServiceImportSchema = mcsResource(
  "ServiceImport describes a service imported from clusters in a ClusterSet.",
  ServiceImportSpecSchema,
  Type.Object(
    {
      endpointSliceObjects: Type.Optional(
        StringEnum(["Present", "Absent"], {
          description: "Whether imported EndpointSlice objects are present for this ServiceImport.",
        }),
      ),
      clusters: Type.Optional(
        ListMap(
          Type.Object({
            cluster: Type.String({
              description: "The name of the exporting cluster (an RFC-1123 DNS label).",
            }),
          }),
          ["cluster"],
          { description: "The exporting clusters from which this service was derived.", maxItems: 64 },
        ),
      ),
      conditions: Type.Optional(
        ConditionList("Ready, as the multi-cluster services controller sees the import."),
      ),
    },
    { description: "The exported services that form the multi-cluster service." },
  ),
);
export type ServiceImport = Static<typeof ServiceImportSchema>;
