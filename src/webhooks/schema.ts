/**
 * What tenantry's webhooks accept and answer, as JSON Schema: the parts of admission.k8s.io/v1
 * AdmissionReview kube-apiserver sends and tenantry reads. Requests are validated against it (a
 * malformed review is a 400 naming the field, never a 500), and the OpenAPI document of the webhook
 * server is made from it.
 */
import { type Static, Type } from "@sinclair/typebox";

const Text = (description: string, maxLength = 1024) => Type.String({ description, maxLength });

/**
 * A namespace, or empty for cluster-scoped objects. Not checked to be a DNS label: for a Namespace
 * being created the API server names the request after it before validating the name, so a bad
 * name must reach the API server's own refusal, not a webhook's 400.
 */
const NamespaceName = (description: string) => Text(description, 253);

const GroupVersionKind = Type.Object(
  {
    group: Text("API group, empty for the core group.", 253),
    version: Text("API version.", 63),
    kind: Text("Kind.", 253),
  },
  { description: "The kind of the object." },
);

const GroupVersionResource = Type.Object(
  {
    group: Text("API group, empty for the core group.", 253),
    version: Text("API version.", 63),
    resource: Text("Resource, e.g. pods.", 253),
  },
  { description: "The resource being requested." },
);

const StringMap = (description: string) =>
  Type.Record(Type.String({ maxLength: 317 }), Type.String({ maxLength: 262144 }), { description });

const ObjectMeta = Type.Object(
  {
    name: Type.Optional(Text("Name.", 253)),
    generateName: Type.Optional(Text("Prefix of a generated name.", 253)),
    namespace: Type.Optional(NamespaceName("Namespace.")),
    labels: Type.Optional(StringMap("Labels.")),
    annotations: Type.Optional(StringMap("Annotations.")),
    ownerReferences: Type.Optional(
      Type.Array(Type.Object({}, { additionalProperties: true }), { description: "Owners.", maxItems: 64 }),
    ),
  },
  { description: "Object metadata.", additionalProperties: true },
);

/** A Kubernetes object: typed metadata, anything else as the kind says. */
const KubernetesObject = (description: string) =>
  Type.Object(
    {
      apiVersion: Type.Optional(Text("apiVersion.", 317)),
      kind: Type.Optional(Text("Kind.", 253)),
      metadata: Type.Optional(ObjectMeta),
    },
    { description, additionalProperties: true },
  );

export const AdmissionRequestSchema = Type.Object(
  {
    uid: Type.String({
      description: "Identifies this review; echoed in the response.",
      minLength: 1,
      maxLength: 128,
    }),
    kind: GroupVersionKind,
    resource: GroupVersionResource,
    subResource: Type.Optional(Text("Subresource, e.g. status or ephemeralcontainers.", 253)),
    requestKind: Type.Optional(GroupVersionKind),
    requestResource: Type.Optional(GroupVersionResource),
    requestSubResource: Type.Optional(Text("Subresource as requested.", 253)),
    name: Type.Optional(Text("Name of the object.", 253)),
    namespace: Type.Optional(NamespaceName("Namespace of the object.")),
    operation: Type.Union(
      [Type.Literal("CREATE"), Type.Literal("UPDATE"), Type.Literal("DELETE"), Type.Literal("CONNECT")],
      { description: "The operation." },
    ),
    userInfo: Type.Object(
      {
        username: Type.Optional(Text("Who asks.", 1024)),
        uid: Type.Optional(Text("Their uid.", 1024)),
        groups: Type.Optional(Type.Array(Text("A group.", 1024), { maxItems: 256 })),
        extra: Type.Optional(
          Type.Record(
            Type.String({ maxLength: 1024 }),
            Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64 }),
          ),
        ),
      },
      { description: "The requester, as the API server authenticated them." },
    ),
    // kube-apiserver sends null for what an operation has not (oldObject on CREATE, object on DELETE).
    object: Type.Optional(
      Type.Union([KubernetesObject("The object as it would be stored (CREATE, UPDATE)."), Type.Null()]),
    ),
    oldObject: Type.Optional(
      Type.Union([KubernetesObject("The stored object (UPDATE, DELETE)."), Type.Null()]),
    ),
    dryRun: Type.Optional(Type.Boolean({ description: "Whether nothing will be stored." })),
    options: Type.Optional(
      Type.Union([
        Type.Object({}, { description: "The operation's options.", additionalProperties: true }),
        Type.Null(),
      ]),
    ),
  },
  { description: "What kube-apiserver asks a webhook." },
);

export const AdmissionReviewRequestSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.Literal("admission.k8s.io/v1")),
    kind: Type.Optional(Type.Literal("AdmissionReview")),
    request: AdmissionRequestSchema,
  },
  { description: "An admission.k8s.io/v1 AdmissionReview with its request." },
);
export type AdmissionReviewRequest = Static<typeof AdmissionReviewRequestSchema>;

export const AdmissionReviewResponseSchema = Type.Object(
  {
    apiVersion: Type.Literal("admission.k8s.io/v1"),
    kind: Type.Literal("AdmissionReview"),
    response: Type.Object({
      uid: Type.String({ description: "The request's uid." }),
      allowed: Type.Boolean({ description: "Whether the request may go on." }),
      status: Type.Optional(
        Type.Object({
          code: Type.Integer({ description: "HTTP status of a refusal." }),
          message: Type.String({ description: "Why, naming the field." }),
          reason: Type.Optional(Type.String()),
        }),
      ),
      patchType: Type.Optional(Type.Literal("JSONPatch")),
      patch: Type.Optional(Type.String({ description: "base64 of a JSON Patch (mutating webhooks)." })),
      warnings: Type.Optional(Type.Array(Type.String())),
    }),
  },
  { description: "The webhook's decision." },
);

/** What is wrong with a request that is not an AdmissionReview at all: RFC 9457 problem details. */
export { ProblemSchema } from "../common/index.js";
