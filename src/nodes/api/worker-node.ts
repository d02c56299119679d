/**
 * WorkerNode (cluster-scoped): a worker node a user asks for (CloudVeneto CaaS's OpenStackNode). A
 * provider builds the machine, the machine joins the cluster with a bootstrap token, and from then
 * on only its owner's pods run on it (policy private) or anyone's (shared).
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DNS1123_LABEL,
  DnsLabel,
  DnsSubdomain,
  ListMap,
  ListSet,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
  type ValidationRule,
} from "../../apis/index.js";

export const NODE_POLICIES = ["private", "shared"] as const;
export type NodePolicy = (typeof NODE_POLICIES)[number];

export const WORKER_NODE_PHASES = [
  "Building",
  "Available",
  "Joining",
  "Running",
  "Failed",
  "Deleting",
] as const;
export type WorkerNodePhase = (typeof WORKER_NODE_PHASES)[number];

/** The longest WorkerNode name: it names the Node and the machine too, and prefixes the cloud's tags. */
export const MAX_WORKER_NODE_NAME = 48;

/** Default time deletion waits for the node's pods to be evicted before it reports DrainTimedOut. */
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 300;

/** The spec fields fixed at creation (all but drainTimeoutSeconds): a different machine is a different node. */
export const IMMUTABLE_SPEC_FIELDS = [
  "flavor",
  "provider",
  "policy",
  "keyPair",
  "image",
  "availabilityZone",
  "securityGroups",
  "owner",
  "tenant",
] as const;

function immutable(field: string): ValidationRule {
  return {
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: `${field} cannot be changed after creation: delete the node and ask for another`,
    fieldPath: `.${field}`,
  };
}

const OpenStackName = (description: string) =>
  Type.String({ description, minLength: 1, maxLength: 255, pattern: "^[^\\x00-\\x1f]+$" });

export const WorkerNodeSpecSchema = Type.Object(
  {
    flavor: OpenStackName("The machine's size, as the provider names it (e.g. `m1.large`)."),
    provider: DnsSubdomain({ description: "The NodeProvider that builds the machine." }),
    policy: StringEnum(NODE_POLICIES, {
      description:
        "private: only the owner's pods run on it (it is labelled and tainted for them). shared: it joins the cluster's common pool.",
      default: "private",
    }),
    keyPair: Type.Optional(OpenStackName("The provider's SSH key pair installed on the machine.")),
    securityGroups: Type.Optional(
      ListSet(OpenStackName("A security group of the provider."), {
        description: "Security groups of the machine (default: the provider's default).",
        maxItems: 16,
      }),
    ),
    image: Type.Optional(
      OpenStackName("The machine image, by id or name (default: the NodeProvider's spec.image)."),
    ),
    availabilityZone: Type.Optional(OpenStackName("Where the provider places the machine.")),
    owner: Type.Optional(
      Type.String({
        description:
          "The user the node belongs to. Set by tenantry's admission from the requester; only cluster administrators may name someone else.",
        minLength: 1,
        maxLength: 512,
      }),
    ),
    tenant: Type.Optional(
      DnsLabel({
        description:
          "The owner's tenant, whose spec.workerNodes quota the node counts against. Set by admission when the owner belongs to one tenant; required when they belong to several.",
      }),
    ),
    drainTimeoutSeconds: Type.Optional(
      Type.Integer({
        description: `How long deletion waits for pods to be evicted (PodDisruptionBudgets respected) before reporting DrainTimedOut; it keeps trying after. Default ${DEFAULT_DRAIN_TIMEOUT_SECONDS}.`,
        minimum: 0,
        maximum: 86400,
        format: "int32",
      }),
    ),
  },
  {
    description: "The node asked for.",
    "x-kubernetes-validations": IMMUTABLE_SPEC_FIELDS.map(immutable),
  },
);
export type WorkerNodeSpec = Static<typeof WorkerNodeSpecSchema>;

const PhaseTimeSchema = Type.Object(
  {
    phase: StringEnum(WORKER_NODE_PHASES, { description: "A phase the node went through." }),
    time: Type.String({ description: "When it entered the phase (milliseconds).", format: "date-time" }),
  },
  { description: "When the node entered a phase." },
);

export const WorkerNodeStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    phase: Type.Optional(StringEnum(WORKER_NODE_PHASES, { description: "Where the node is in its life." })),
    reason: Type.Optional(
      Type.String({ description: "Why it is in this phase: one CamelCase word.", maxLength: 128 }),
    ),
    message: Type.Optional(Type.String({ description: "Why, for people.", maxLength: 8192 })),
    machine: Type.Optional(
      Type.Object(
        {
          id: Type.String({ description: "The provider's id of the machine.", maxLength: 255 }),
          status: Type.Optional(
            Type.String({
              description: "The machine's status as the provider says it (BUILD, ACTIVE, ERROR…).",
              maxLength: 64,
            }),
          ),
          ipv4: Type.Optional(
            Type.String({ description: "The machine's first IPv4 address.", maxLength: 64 }),
          ),
          addresses: Type.Optional(
            ListSet(Type.String({ description: "An address.", maxLength: 64 }), {
              description: "Every address the provider reports.",
              maxItems: 32,
            }),
          ),
        },
        { description: "The machine the provider built." },
      ),
    ),
    nodeName: Type.Optional(DnsSubdomain({ description: "The Node the machine registered." })),
    bootstrapTokenId: Type.Optional(
      Type.String({
        description:
          "Id of the node's bootstrap token (Secret kube-system/bootstrap-token-<id>), until it is deleted.",
        pattern: "^[a-z0-9]{6}$",
      }),
    ),
    joinDeadline: Type.Optional(
      Type.String({ description: "When the node fails unless Running.", format: "date-time" }),
    ),
    phases: Type.Optional(
      ListMap(PhaseTimeSchema, ["phase"], {
        description: "When the node entered each phase it went through.",
        maxItems: WORKER_NODE_PHASES.length,
      }),
    ),
    conditions: Type.Optional(
      ConditionList(
        "`MachineReady`: the provider's machine is active; `Joined`: its Node registered with a certificate; `Ready`: the Node is Ready; `Drained`: pods evicted before deletion.",
      ),
    ),
  },
  { description: "Where the node is, written by tenantry." },
);
export type WorkerNodeStatus = Static<typeof WorkerNodeStatusSchema>;

export const WorkerNodeSchema = ResourceSchema({
  description: "A worker node on demand: a provider's machine that joins the cluster for its owner.",
  name: {
    description: `Name of the node (and of its Node and machine): a DNS label of at most ${MAX_WORKER_NODE_NAME} characters.`,
    maxLength: MAX_WORKER_NODE_NAME,
    pattern: DNS1123_LABEL,
  },
  spec: WorkerNodeSpecSchema,
  status: WorkerNodeStatusSchema,
});
export type WorkerNode = Static<typeof WorkerNodeSchema>;
