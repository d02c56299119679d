/**
 * NodeProvider (cluster-scoped): where WorkerNodes' machines come from — the simulated machines of
 * the embedded default, or an OpenStack cloud's compute API — and the flavors it offers.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  ListSet,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";

export const PROVIDER_TYPES = ["simulated", "openstack"] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export const NETWORK_MODES = ["none", "auto", "list"] as const;

export const DEFAULT_JOIN_TIMEOUT_SECONDS = 600;

const OpenStackSchema = Type.Object(
  {
    authUrl: Type.String({
      description: "Keystone's v3 endpoint, e.g. `https://keystone.example.com:5000/v3`.",
      minLength: 1,
      maxLength: 2048,
      pattern: "^https?://",
    }),
    credentialsSecret: Type.Object(
      {
        name: DnsSubdomain({ description: "Name of the Secret." }),
        namespace: Type.Optional(
          DnsLabel({ description: "Its namespace (default: tenantry's own, tenantry-system)." }),
        ),
      },
      {
        description:
          "A Secret with either `application_credential_id` and `application_credential_secret`, or `username`, `password`, `project_name` (and optionally `user_domain_name`, `project_domain_name`, default `Default`).",
      },
    ),
    region: Type.Optional(Type.String({ description: "The catalog region to use.", maxLength: 255 })),
    interface: Type.Optional(
      StringEnum(["public", "internal", "admin"] as const, {
        description: "Which catalog endpoints to call. Default public.",
        default: "public",
      }),
    ),
    image: Type.Optional(
      Type.String({
        description: "Default image (id or name) for nodes that name none.",
        minLength: 1,
        maxLength: 255,
      }),
    ),
    networkMode: Type.Optional(
      StringEnum(NETWORK_MODES, {
        description:
          "none: no network (Nova's `networks: none`); auto: Nova picks or makes one; list: the networks in `networks`. Default auto.",
        default: "auto",
      }),
    ),
    networks: Type.Optional(
      ListSet(Type.String({ description: "A network id.", minLength: 1, maxLength: 64 }), {
        description: "Networks the machines attach to (networkMode list).",
        maxItems: 8,
      }),
    ),
  },
  { description: "An OpenStack cloud: Nova through Keystone v3." },
);

export const NodeProviderSpecSchema = Type.Object(
  {
    type: StringEnum(PROVIDER_TYPES, {
      description:
        "simulated: machines are local processes (the embedded default only); openstack: servers of Nova's compute API.",
    }),
    openstack: Type.Optional(OpenStackSchema),
    joinTimeoutSeconds: Type.Optional(
      Type.Integer({
        description: `How long a node may take from request to Running before it fails and its machine is deleted; its bootstrap token expires then. Default ${DEFAULT_JOIN_TIMEOUT_SECONDS}.`,
        minimum: 5,
        maximum: 86400,
        format: "int32",
      }),
    ),
  },
  {
    description: "Which cloud, and how to reach it.",
    "x-kubernetes-validations": [
      {
        rule: "self.type != 'openstack' || has(self.openstack)",
        message: "an openstack provider needs spec.openstack",
        fieldPath: ".openstack",
      },
      {
        rule: "!has(self.openstack) || !has(self.openstack.networkMode) || self.openstack.networkMode != 'list' || has(self.openstack.networks)",
        message: "networkMode list needs networks",
        fieldPath: ".openstack.networks",
      },
    ],
  },
);
export type NodeProviderSpec = Static<typeof NodeProviderSpecSchema>;

const FlavorSchema = Type.Object(
  {
    name: Type.String({ description: "The flavor's name.", maxLength: 255 }),
    vcpus: Type.Integer({ description: "Virtual CPUs.", minimum: 0, format: "int32" }),
    memoryMiB: Type.Integer({ description: "Memory in MiB.", minimum: 0, format: "int64" }),
    diskGiB: Type.Optional(Type.Integer({ description: "Root disk in GiB.", minimum: 0, format: "int64" })),
  },
  { description: "A machine size the provider offers." },
);

export const NodeProviderStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    flavors: Type.Optional(
      Type.Array(FlavorSchema, {
        description: "The flavors the provider offers, as it last listed them.",
        maxItems: 512,
        "x-kubernetes-list-type": "atomic",
      }),
    ),
    flavorSummary: Type.Optional(
      Type.String({ description: "The flavors' names on one line.", maxLength: 1024 }),
    ),
    lastListed: Type.Optional(
      Type.String({ description: "When the flavors were last listed.", format: "date-time" }),
    ),
    conditions: Type.Optional(ConditionList("`Ready`: the provider answers and lists its flavors.")),
  },
  { description: "What tenantry last learned from the provider." },
);
export type NodeProviderStatus = Static<typeof NodeProviderStatusSchema>;

export const NodeProviderSchema = ResourceSchema({
  description: "Where worker nodes' machines come from.",
  spec: NodeProviderSpecSchema,
  status: NodeProviderStatusSchema,
});
export type NodeProvider = Static<typeof NodeProviderSchema>;
export type ProviderFlavor = Static<typeof FlavorSchema>;
