/** The Admin REST API's wire shapes (Vasilenko & Kurapati, Table 2), published in its OpenAPI document. */
import { type Static, Type } from "@sinclair/typebox";
import { DNS1123_LABEL } from "../../apis/index.js";
import { ProblemSchema } from "../../common/index.js";
import { MAX_ACCESS_ENTRIES, MAX_GROUP_NAME, MAX_USER_NAME, RUNTIME_PHASES } from "../api/runtime.js";
import { MAX_CULL_SECONDS, MIN_CULL_SECONDS } from "../api/runtime-service.js";

export const MAX_PAGE = 500;
export const DEFAULT_PAGE = 100;
/** Largest start request body (plugin parameters). */
export const MAX_BODY_BYTES = 64 * 1024;

const User = Type.String({
  description: "The user, as the identity service names them (URL-encoded in the path).",
  minLength: 1,
  maxLength: MAX_USER_NAME,
  pattern: "^[^/\\s]+$",
});
const Label = (description: string) =>
  Type.String({ description, minLength: 1, maxLength: 63, pattern: DNS1123_LABEL });

export const UserParams = Type.Object({ user: User });
export const InstanceParams = Type.Object({
  user: User,
  service: Label("A RuntimeService name (a DNS label)."),
  instance: Label("The instance name, chosen by the user (a DNS label)."),
});
export type InstanceParams = Static<typeof InstanceParams>;

export const StartBody = Type.Object(
  {},
  {
    description: "Plugin parameters, over the service's defaults (the request's values win).",
    additionalProperties: true,
    maxProperties: 256,
  },
);

const CullSeconds = (description: string) =>
  Type.Optional(Type.Integer({ description, minimum: MIN_CULL_SECONDS, maximum: MAX_CULL_SECONDS }));

export const StartQuery = Type.Object({
  tenant: Type.Optional(
    Label("Delegated starts only: the tenant the user's runtime belongs to (a DNS label)."),
  ),
  idleTimeoutSeconds: CullSeconds(
    "Cull this runtime after this long idle: at most the service's idleTimeoutSeconds.",
  ),
  maxAgeSeconds: CullSeconds(
    "Cull this runtime after running this long: at most the service's maxAgeSeconds.",
  ),
});
export type StartQuery = Static<typeof StartQuery>;

export const StopQuery = Type.Object({
  idleSeconds: Type.Optional(
    Type.Integer({
      description:
        "The runtime's agent only: it stops its runtime for being idle this long (recorded as a cull).",
      minimum: 0,
      maximum: 31_536_000,
    }),
  ),
});
export type StopQuery = Static<typeof StopQuery>;

export const ActivityBody = Type.Object(
  {
    lastActivity: Type.Optional(
      Type.String({
        description:
          "When the runtime was last active, as it says itself (RFC 3339). Absent: nothing to report, only the answer is wanted.",
        format: "date-time",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ActivityBody = Static<typeof ActivityBody>;

export const ActivityAnswer = Type.Object(
  {
    lastActivity: Type.String({
      description:
        "The runtime's last activity as culling counts it: the latest of the proxy's and its agent's.",
    }),
    idleTimeoutSeconds: Type.Optional(
      Type.Integer({
        description: "tenantry culls the runtime after this long idle (absent: not for idleness).",
      }),
    ),
    maxAgeSeconds: Type.Optional(
      Type.Integer({ description: "tenantry culls the runtime after running this long." }),
    ),
    activityLagSeconds: Type.Optional(
      Type.Integer({
        description:
          "How late the proxy's activity may show here: idle culling waits this much past the idle timeout.",
      }),
    ),
  },
  { description: "What culling knows of the runtime." },
);

export const PageQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      description: "Most items in one page.",
      minimum: 1,
      maximum: MAX_PAGE,
      default: DEFAULT_PAGE,
    }),
  ),
  continue: Type.Optional(Type.String({ description: "The previous page's `continue`.", maxLength: 1024 })),
});
export type PageQuery = Static<typeof PageQuery>;

const Step = Type.Object({
  name: Type.String(),
  state: Type.String(),
  time: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
});

export const RuntimeStatusBody = Type.Object(
  {
    user: Type.String(),
    tenant: Type.String(),
    service: Type.String(),
    instance: Type.String(),
    namespace: Type.String({ description: "Where the Runtime object and its workloads live." }),
    name: Type.String(),
    desiredState: Type.String(),
    phase: Type.Union(RUNTIME_PHASES.map((p) => Type.Literal(p))),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    ready: Type.Boolean({ description: "Running and answering." }),
    url: Type.Optional(Type.String({ description: "The runtime through the proxy: `<proxy>/r/<token>/`." })),
    progressUrl: Type.String(),
    cluster: Type.Optional(Type.String()),
    pod: Type.Optional(Type.String({ description: "The pod serving it (its logs are that pod's)." })),
    steps: Type.Array(Step),
    startedAt: Type.Optional(Type.String()),
    lastActivity: Type.Optional(Type.String()),
  },
  { description: "A runtime's state." },
);
export type RuntimeStatusBody = Static<typeof RuntimeStatusBody>;

/** One progress event from a runtime's state, its progress (percent of steps done) and message. */
export type ProgressFormat = (
  status: RuntimeStatusBody,
  progress: { progress: number; message: string },
) => Record<string, unknown>;

export const RuntimeListBody = Type.Object({
  items: Type.Array(RuntimeStatusBody),
  continue: Type.Optional(Type.String({ description: "Give it back as `continue` for the next page." })),
});

export const Problem = Type.Object(
  {
    ...ProblemSchema.properties,
    phase: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
    runtime: Type.Optional(Type.Unknown({ description: "503: the runtime's state." })),
  },
  { description: "An RFC 9457 problem.", additionalProperties: true },
);

const AccessList = (what: string, maxLength: number) =>
  Type.Array(Type.String({ description: what, minLength: 1, maxLength }), {
    description: `${what}s besides the runtime's own user; repeats count once.`,
    maxItems: MAX_ACCESS_ENTRIES,
  });

/** `spec.access` of a Runtime as the Admin API reads and replaces it. */
export const AccessBody = Type.Object(
  {
    users: Type.Optional(AccessList("A user, as the identity service names them", MAX_USER_NAME)),
    groups: Type.Optional(AccessList("A group, as the identity service reports it", MAX_GROUP_NAME)),
  },
  {
    description: "Who besides its user may use the runtime through the runtimes proxy.",
    additionalProperties: false,
  },
);
export type AccessBody = Static<typeof AccessBody>;
