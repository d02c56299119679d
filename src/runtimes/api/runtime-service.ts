/**
 * RuntimeService (cluster-scoped): registers a service users may start runtimes of, and the plugin
 * that turns a user's parameters into the service's all-in-one YAML (Vasilenko & Kurapati, Table 3).
 * Its name is the service name in `/services/{user}/{service}/{instance}`.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  LabelMap,
  ListSet,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
  TolerationSchema,
} from "../../apis/index.js";

export const NAMESPACE_MODES = ["Segregated", "Combined"] as const;
export type NamespaceMode = (typeof NAMESPACE_MODES)[number];

export const BUILTIN_PLUGINS = ["generic"] as const;
export type BuiltinPlugin = (typeof BUILTIN_PLUGINS)[number];

/** Namespace of every runtime in Combined mode unless the service names another. */
export const DEFAULT_RUNTIMES_NAMESPACE = "tenantry-runtimes";

const TimeoutSeconds = (description: string, defaultValue: number) =>
  Type.Optional(Type.Integer({ description, minimum: 1, maximum: 600, default: defaultValue }));

export const PluginRefSchema = Type.Object(
  {
    builtin: Type.Optional(
      StringEnum(BUILTIN_PLUGINS, {
        description: "A plugin built into tenantry: `generic` runs any container image.",
      }),
    ),
    http: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            description: "Base URL of the plugin; callouts are POSTed to `<url>/<callout>` as JSON.",
            minLength: 1,
            maxLength: 2048,
            pattern: "^https?://",
          }),
          caBundle: Type.Optional(
            Type.String({ description: "PEM CA bundle trusted for an https URL.", maxLength: 65536 }),
          ),
          timeoutSeconds: TimeoutSeconds("Deadline of one callout.", 30),
        },
        { description: "A plugin served over HTTP." },
      ),
    ),
    exec: Type.Optional(
      Type.Object(
        {
          command: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
            description:
              "Executable and leading arguments; the callout name is appended and its JSON request written to standard input; it answers JSON on standard output (as flex-volume drivers do).",
            minItems: 1,
            maxItems: 16,
          }),
          timeoutSeconds: TimeoutSeconds("Deadline of one callout.", 30),
        },
        { description: "A plugin run as an executable on tenantry's host." },
      ),
    ),
  },
  {
    description: "The service plugin: exactly one of builtin, http or exec.",
    "x-kubernetes-validations": [
      {
        rule: "(has(self.builtin) ? 1 : 0) + (has(self.http) ? 1 : 0) + (has(self.exec) ? 1 : 0) == 1",
        message: "give exactly one of builtin, http or exec",
      },
    ],
  },
);
export type PluginRef = Static<typeof PluginRefSchema>;

/** Shortest and longest idle timeout or maximum age a service or runtime may set. */
/** `spec.routeAccess`: who the runtimes proxy lets into a service's runtimes. */
export const ROUTE_ACCESS = ["Owner", "Public"] as const;
export type RouteAccess = (typeof ROUTE_ACCESS)[number];

export const MIN_CULL_SECONDS = 10;
export const MAX_CULL_SECONDS = 31_536_000;

/** The runtime agent's image (src/runtimes/agent, run with node) unless the service names another. */
export const DEFAULT_RUNTIME_AGENT_IMAGE = "ghcr.io/tenantry/runtime-agent:0.1.0";

export const RuntimeAgentSchema = Type.Object(
  {
    image: Type.Optional(
      Type.String({
        description: `The agent's image (default ${DEFAULT_RUNTIME_AGENT_IMAGE}).`,
        minLength: 1,
        maxLength: 1024,
      }),
    ),
    activity: Type.Optional(
      Type.Object(
        {
          path: Type.String({
            description:
              "Path under the runtime's endpoint (its port and base path) answering JSON with the runtime's last activity, e.g. Jupyter Server's `/api/status`.",
            minLength: 1,
            maxLength: 1024,
            pattern: "^/",
          }),
          field: Type.Optional(
            Type.String({
              description:
                "The JSON field holding the time (default `last_activity`, as Jupyter Server names it).",
              minLength: 1,
              maxLength: 128,
              default: "last_activity",
            }),
          ),
          tokenFromEnv: Type.Optional(
            Type.String({
              description:
                "An environment variable of the runtime's first container (e.g. `JUPYTER_TOKEN`) the agent gets too and sends as `Authorization: token <value>`.",
              minLength: 1,
              maxLength: 253,
              pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
            }),
          ),
        },
        { description: "Where the agent reads the runtime's own last activity." },
      ),
    ),
    periodSeconds: Type.Optional(
      Type.Integer({
        description: "How often the agent reads and reports activity.",
        minimum: 5,
        maximum: 3600,
        default: 60,
      }),
    ),
  },
  {
    description:
      "Give every runtime pod the runtime agent, a sidecar that reports what the runtime says of its own activity (culling counts it) and stops its runtime itself once it is idle past its timeout (with its pod's projected token).",
  },
);
export type RuntimeAgent = Static<typeof RuntimeAgentSchema>;

export const RuntimeServiceSpecSchema = Type.Object(
  {
    plugin: PluginRefSchema,
    defaults: Type.Optional(
      Type.Object(
        {},
        {
          description:
            "Plugin parameters used where a start request leaves them out (the request's own values win).",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      ),
    ),
    cluster: Type.Optional(
      Type.Object(
        {
          name: DnsLabel({ description: "Name of the runtimes cluster, for status and logs." }),
          kubeconfigSecretRef: Type.Object(
            {
              name: DnsSubdomain({
                description: "Secret in tenantry's namespace (tenantry-system) with key `kubeconfig`.",
              }),
            },
            { description: "Credentials for the runtimes cluster." },
          ),
        },
        {
          description:
            "Where this service's runtimes run. Absent: the cluster tenantry serves the Admin API from (Vasilenko & Kurapati separate the stateless UI cluster from the runtimes cluster).",
        },
      ),
    ),
    namespaceMode: Type.Optional(
      StringEnum(NAMESPACE_MODES, {
        description:
          "Segregated: a namespace per user in their tenant (DNS `service-instance.namespace`). Combined: every runtime in one namespace, objects named `user-service-instance`.",
        default: "Segregated",
      }),
    ),
    runtimesNamespace: Type.Optional(
      DnsLabel({
        description: `Namespace of every runtime in Combined mode (default ${DEFAULT_RUNTIMES_NAMESPACE}).`,
      }),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          concurrentStartsPerUser: Type.Optional(
            Type.Integer({
              description: "Starts one user may have in progress at once.",
              minimum: 1,
              maximum: 1000,
              default: 2,
            }),
          ),
          concurrentStarts: Type.Optional(
            Type.Integer({
              description: "Starts of this service in progress at once, all users.",
              minimum: 1,
              maximum: 100000,
              default: 100,
            }),
          ),
          instancesPerUser: Type.Optional(
            Type.Integer({
              description: "Runtimes of this service one user may have.",
              minimum: 1,
              maximum: 1000,
              default: 10,
            }),
          ),
        },
        { description: "Limits beyond which a start is answered 429 with Retry-After." },
      ),
    ),
    startTimeoutSeconds: Type.Optional(
      Type.Integer({
        description: "A start not Running by then fails.",
        minimum: 10,
        maximum: 3600,
        default: 300,
      }),
    ),
    idleTimeoutSeconds: Type.Optional(
      Type.Integer({
        description:
          "Culling: a running runtime with no activity for this long — no request or WebSocket frame through the proxy, and none its agent reports — is stopped (an Event `Culled` says how long it was idle). A runtime may ask for less (`spec.idleTimeoutSeconds`), never more. Absent: runtimes are not culled for idleness.",
        minimum: MIN_CULL_SECONDS,
        maximum: MAX_CULL_SECONDS,
      }),
    ),
    maxAgeSeconds: Type.Optional(
      Type.Integer({
        description:
          "Culling: a runtime running for this long is stopped however active it is. A runtime may ask for less (`spec.maxAgeSeconds`), never more.",
        minimum: MIN_CULL_SECONDS,
        maximum: MAX_CULL_SECONDS,
      }),
    ),
    agent: Type.Optional(RuntimeAgentSchema),
    jupyterhub: Type.Optional(
      Type.Boolean({
        description:
          "Runtimes of this service are JupyterHub single-user servers, as KubeSpawner runs them (`jupyterhub-singleuser`): the runtime's first container gets the `JUPYTERHUB_*` environment, with an API token of the server's own scopes (in the Secret `<runtime>-jupyterhub` of the runtime's namespace, revoked when the runtime stops or goes), and the server logs browsers in through tenantry's JupyterHub API (OAuth at `/hub/api/oauth2/`).",
      }),
    ),
    pods: Type.Optional(
      Type.Object(
        {
          nodeSelector: Type.Optional(
            LabelMap("Labels a node must carry; merged into every runtime pod's nodeSelector."),
          ),
          tolerations: Type.Optional(
            Type.Array(TolerationSchema, {
              description: "Tolerations added to every runtime pod, so runtimes may use tainted nodes.",
              maxItems: 16,
            }),
          ),
          priorityClassName: Type.Optional(
            DnsSubdomain({ description: "PriorityClass of every runtime pod." }),
          ),
        },
        {
          description:
            "Where this service's pods run: merged into every pod template the plugin returns and into the service's image pre-pull DaemonSet.",
        },
      ),
    ),
    routeAccess: Type.Optional(
      StringEnum(ROUTE_ACCESS, {
        description:
          "Who the runtimes proxy lets into this service's runtimes. Owner (the default): the runtime's user and those its `spec.access` names, signed in through tenantry's identity (a session cookie, an identity token, or a JupyterHub API token with `access:servers`). Public: anyone holding the runtime's URL — for services that authenticate on their own or serve public content; set it only on purpose.",
        default: "Owner",
      }),
    ),
    proxyModule: Type.Optional(
      Type.Object(
        {
          name: DnsLabel({ description: "A service module known to the runtimes proxy." }),
          secretRef: Type.Optional(
            Type.Object(
              {
                name: DnsSubdomain({ description: "Secret in tenantry-system given to the module's init." }),
              },
              { description: "The module's settings; init runs again whenever it changes." },
            ),
          ),
        },
        { description: "Service module the proxy runs for this service's requests (Table 1)." },
      ),
    ),
  },
  {
    description: "A service users may start runtimes of.",
    "x-kubernetes-validations": [
      {
        rule: "has(self.cluster) == has(oldSelf.cluster) && (!has(self.cluster) || self.cluster.name == oldSelf.cluster.name)",
        message:
          "cluster cannot change: the service's runtimes run there (its kubeconfigSecretRef may); register another service",
        fieldPath: ".cluster",
      },
    ],
  },
);
export type RuntimeServiceSpec = Static<typeof RuntimeServiceSpecSchema>;

export const RuntimeServiceStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    capabilities: Type.Optional(
      ListSet(Type.String({ maxLength: 63 }), {
        description: "What the plugin's init said it supports (deploy-service, check-service, …).",
        maxItems: 32,
      }),
    ),
    prePull: Type.Optional(
      Type.Object(
        {
          daemonSet: Type.String({
            description: "The DaemonSet pre-pulling the images (namespace/name in the runtimes cluster).",
            maxLength: 317,
          }),
          images: ListSet(Type.String({ maxLength: 1024 }), {
            description: "Images pre-pulled on every eligible node.",
            maxItems: 64,
          }),
        },
        { description: "The image pre-pull DaemonSet (the plugin's image-pull and image-cleanup callouts)." },
      ),
    ),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: the plugin answered init; `ImagesPulled`: the pre-pull DaemonSet is up to date.",
      ),
    ),
  },
  { description: "Whether the plugin is usable." },
);
export type RuntimeServiceStatus = Static<typeof RuntimeServiceStatusSchema>;

export const RuntimeServiceSchema = ResourceSchema({
  description: "A service users may start runtimes of, and its plugin.",
  name: { description: "The service name.", maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" },
  spec: RuntimeServiceSpecSchema,
  status: RuntimeServiceStatusSchema,
});
export type RuntimeService = Static<typeof RuntimeServiceSchema>;
