/**
 * Runtime (namespaced): one stateful per-user runtime — user, service, instance — and what the
 * Admin API, the controller and the proxy know of it. The Admin REST API is a façade over these
 * objects; the proxy builds its routes from them.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DnsLabel,
  ListMap,
  ListSet,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";
import { MAX_CULL_SECONDS, MIN_CULL_SECONDS } from "./runtime-service.js";

export const DESIRED_STATES = ["Running", "Stopped"] as const;
export type DesiredState = (typeof DESIRED_STATES)[number];

export const RUNTIME_PHASES = [
  "Pending",
  "Starting",
  "Running",
  "Stopping",
  "Stopped",
  "Failed",
  "Deleting",
] as const;
export type RuntimePhase = (typeof RUNTIME_PHASES)[number];

/** The start sequence, in order, as `GET …/progress` reports it. */
export const START_STEPS = ["Namespace", "Volumes", "Scheduled", "Pulling", "Ready"] as const;
export type StartStep = (typeof START_STEPS)[number];
export const STEP_STATES = ["Pending", "InProgress", "Done", "Failed"] as const;

/**
 * Holds a Runtime being deleted until everything it created (in whichever cluster) is deleted and
 * its plugin's deregister-service was called. The Admin API creates Runtimes with it.
 */
export const RUNTIME_FINALIZER = "tenantry.dev/runtime-cleanup";

/**
 * `"true"` on a Runtime: the controller leaves it alone — no start, stop, status or clean-up — until
 * the annotation is removed (as Cluster API's paused annotation does), for a manual repair or a
 * move. The proxy keeps serving what its status says.
 */
export const RUNTIME_PAUSED_ANNOTATION = "tenantry.dev/paused";

/**
 * Set on a Runtime by another part of tenantry that must finish something before the runtime's
 * next start deploys it (the backup server putting back the data of a runtime torn down while
 * idle). Its value is a {@link StartGate} as JSON. While it is there a start waits, without a
 * deadline, in phase Starting with its Volumes step showing the message, and a stopped runtime
 * gives its reason and message; a gate `failed` for the runtime's current generation fails the
 * start (the next start, a new generation, waits on the gate again).
 */
export const RUNTIME_START_GATE_ANNOTATION = "tenantry.dev/start-gate";

/**
 * Set on a Runtime with the spec change that culls it: why tenantry stopped it (a {@link Culled} as
 * JSON). The stopped runtime gives that as its reason while the spec is the one the cull wrote
 * (`generation`); a resume and a later stop are told apart by their own generation.
 */
export const RUNTIME_CULLED_ANNOTATION = "tenantry.dev/culled";

export interface Culled {
  /** `Culled`. */
  reason: string;
  message: string;
  /** The generation the cull's spec change made. */
  generation: number;
}

/** The runtime's cull, when its current spec is the one that culled it. */
export function culledOf(runtime: {
  metadata?: { annotations?: Record<string, string>; generation?: number };
}): Culled | undefined {
  const value = runtime.metadata?.annotations?.[RUNTIME_CULLED_ANNOTATION];
  if (value === undefined) return undefined;
  try {
    const culled = JSON.parse(value) as Partial<Culled>;
    if (
      typeof culled.reason === "string" &&
      typeof culled.message === "string" &&
      culled.generation === runtime.metadata?.generation
    )
      return { reason: culled.reason, message: culled.message, generation: culled.generation as number };
  } catch {
    // Not ours to read: ignored.
  }
  return undefined;
}

export interface StartGate {
  /** One CamelCase word, e.g. `Restoring`. */
  reason: string;
  /** For people: what the start waits for. */
  message: string;
  /** The runtime generation whose start fails with this reason and message. */
  failedGeneration?: number;
}

/** The runtime's start gate, if it has one (an unreadable value still holds the start). */
export function startGateOf(runtime: {
  metadata?: { annotations?: Record<string, string> };
}): StartGate | undefined {
  const value = runtime.metadata?.annotations?.[RUNTIME_START_GATE_ANNOTATION];
  if (value === undefined) return undefined;
  try {
    const gate = JSON.parse(value) as Partial<StartGate>;
    if (typeof gate.reason === "string" && typeof gate.message === "string")
      return {
        reason: gate.reason,
        message: gate.message,
        ...(typeof gate.failedGeneration === "number" ? { failedGeneration: gate.failedGeneration } : {}),
      };
  } catch {
    // Not JSON: reported below as it is.
  }
  return { reason: "StartGated", message: `annotation ${RUNTIME_START_GATE_ANNOTATION}: ${value}` };
}

/** Longest user name accepted (identity providers' names, e.g. `keystone:alice@example.com`). */
export const MAX_USER_NAME = 256;

/** Most users, and most groups, one runtime's `spec.access` may name. */
export const MAX_ACCESS_ENTRIES = 64;
/** Longest group name `spec.access.groups` takes. */
export const MAX_GROUP_NAME = 256;

export const RuntimeAccessSchema = Type.Object(
  {
    users: Type.Optional(
      ListSet(
        Type.String({
          description: "A user, as the identity service names them.",
          minLength: 1,
          maxLength: MAX_USER_NAME,
        }),
        { description: "Users besides the runtime's own who may use it.", maxItems: MAX_ACCESS_ENTRIES },
      ),
    ),
    groups: Type.Optional(
      ListSet(
        Type.String({
          description: "A group, as the identity service reports it (e.g. `tenantry:tenant:<tenant>`).",
          minLength: 1,
          maxLength: MAX_GROUP_NAME,
        }),
        { description: "Groups whose members may use it.", maxItems: MAX_ACCESS_ENTRIES },
      ),
    ),
  },
  {
    description:
      "Who besides its user may use the runtime through the runtimes proxy (JupyterHub's `access:servers!server=<user>/<name>`). Changed by its user or an admin (the Admin API's `PUT …/access`, or an edit RBAC allows); takes effect on the next request, and closes the WebSocket connections it no longer lets in.",
  },
);
export type RuntimeAccess = Static<typeof RuntimeAccessSchema>;

const immutable = (field: string) => ({ rule: "self == oldSelf", message: `${field} is immutable` });

export const RuntimeSpecSchema = Type.Object(
  {
    user: Type.String({
      description: "The user the runtime belongs to, as the identity service names them.",
      minLength: 1,
      maxLength: MAX_USER_NAME,
      "x-kubernetes-validations": [immutable("user")],
    }),
    tenant: DnsLabel({
      description: "The tenant the user runs it in (its quota and isolation apply).",
      "x-kubernetes-validations": [immutable("tenant")],
    }),
    service: DnsLabel({
      description: "The RuntimeService it is an instance of.",
      "x-kubernetes-validations": [immutable("service")],
    }),
    instance: DnsLabel({
      description: "The instance name, chosen by the user.",
      "x-kubernetes-validations": [immutable("instance")],
    }),
    config: Type.Optional(
      Type.Object(
        {},
        {
          description: "Plugin parameters (the start request's JSON body over the service's defaults).",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      ),
    ),
    desiredState: StringEnum(DESIRED_STATES, {
      description:
        "Running: deployed and serving. Stopped: deployment and service removed, volumes and secrets kept.",
      default: "Running",
    }),
    idleTimeoutSeconds: Type.Optional(
      Type.Integer({
        description:
          "Culled after this long without activity; at most the service's idleTimeoutSeconds (a longer value counts as the service's).",
        minimum: MIN_CULL_SECONDS,
        maximum: MAX_CULL_SECONDS,
      }),
    ),
    maxAgeSeconds: Type.Optional(
      Type.Integer({
        description:
          "Culled after running this long; at most the service's maxAgeSeconds (a longer value counts as the service's).",
        minimum: MIN_CULL_SECONDS,
        maximum: MAX_CULL_SECONDS,
      }),
    ),
    access: Type.Optional(RuntimeAccessSchema),
    startRequestedAt: Type.Optional(
      Type.String({
        description:
          "When a start was last asked for again; a new value retries a runtime whose start failed.",
        format: "date-time",
      }),
    ),
  },
  { description: "Which runtime, and whether it should run." },
);
export type RuntimeSpec = Static<typeof RuntimeSpecSchema>;

const StepSchema = Type.Object(
  {
    name: StringEnum(START_STEPS, { description: "The step of the start sequence." }),
    state: StringEnum(STEP_STATES, { description: "Where the step is." }),
    time: Type.Optional(Type.String({ description: "When it last changed.", format: "date-time" })),
    message: Type.Optional(Type.String({ description: "What happened, for people.", maxLength: 4096 })),
  },
  { description: "One step of the start sequence." },
);

const AppliedObjectSchema = Type.Object(
  {
    apiVersion: Type.String({ maxLength: 253 }),
    kind: Type.String({ maxLength: 63 }),
    name: Type.String({ maxLength: 253 }),
  },
  { description: "An object the runtime's deployment created (removed with it)." },
);

export const RuntimeStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    phase: Type.Optional(StringEnum(RUNTIME_PHASES, { description: "Where the runtime is in its life." })),
    reason: Type.Optional(
      Type.String({ description: "Why it is in this phase: one CamelCase word.", maxLength: 1024 }),
    ),
    message: Type.Optional(
      Type.String({ description: "Why it is in this phase, for people.", maxLength: 32768 }),
    ),
    cluster: Type.Optional(Type.String({ description: "The cluster it runs in.", maxLength: 63 })),
    route: Type.Optional(
      Type.Object(
        {
          token: Type.String({
            description: "Opaque, unguessable route token: the proxy serves the runtime under `/r/<token>/`.",
            minLength: 32,
            maxLength: 128,
            pattern: "^[A-Za-z0-9_-]+$",
          }),
        },
        {
          description:
            "How the proxy reaches it: a new token at every start or resume; none while stopped or failed (the old URL stops working).",
        },
      ),
    ),
    endpoint: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            description: "Base URL of the runtime's pod, e.g. `http://10.1.2.3:8888`.",
            maxLength: 2048,
          }),
          pod: Type.Optional(Type.String({ description: "The pod serving it.", maxLength: 253 })),
        },
        { description: "Where the runtime answers while Running." },
      ),
    ),
    steps: Type.Optional(ListMap(StepSchema, ["name"], { description: "The start sequence.", maxItems: 8 })),
    objects: Type.Optional(
      AtomicList(AppliedObjectSchema, {
        description: "What the plugin's YAML created in the runtime's namespace.",
        maxItems: 64,
      }),
    ),
    startTime: Type.Optional(
      Type.String({
        description: "When the current start (or resume) began: the start timeout counts from here.",
        format: "date-time",
      }),
    ),
    startedAt: Type.Optional(
      Type.String({ description: "When it last became Running.", format: "date-time" }),
    ),
    lastActivity: Type.Optional(
      Type.String({
        description:
          "Last activity: a request or WebSocket frame through the proxy, or what the runtime's agent reports (culling reads it).",
        format: "date-time",
      }),
    ),
    conditions: Type.Optional(ConditionList("`Ready`: the runtime answers; `Deployed`: its objects exist.")),
  },
  { description: "Where the runtime is and how to reach it." },
);
export type RuntimeStatus = Static<typeof RuntimeStatusSchema>;

export const RuntimeSchema = ResourceSchema({
  description: "A stateful per-user runtime: user, service, instance.",
  spec: RuntimeSpecSchema,
  status: RuntimeStatusSchema,
});
export type Runtime = Static<typeof RuntimeSchema>;
