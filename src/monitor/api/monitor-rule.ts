/**
 * MonitorRule (cluster-scoped): one condition of Vasilenko & Kurapati, Table 4, watched on pods, claims or
 * nodes — cluster-wide, or only in one tenant's namespaces — with where its alerts go and what may
 * be done about them. The monitor fires one alert per object and rule, and resolves it when the
 * condition ends.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  LabelSelector,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";

export const MONITORED_KINDS = ["Pod", "PersistentVolumeClaim", "Node"] as const;
export type MonitoredKind = (typeof MONITORED_KINDS)[number];

export const MONITOR_CONDITIONS = [
  "long-running",
  "long-pending",
  "long-terminating",
  "last-restart",
  "endpoint-probe",
  "not-ready",
] as const;
export type MonitorCondition = (typeof MONITOR_CONDITIONS)[number];

/** Which conditions each kind has (Table 4). */
export const CONDITIONS_OF: Record<MonitoredKind, readonly MonitorCondition[]> = {
  Pod: ["long-running", "long-pending", "long-terminating", "last-restart", "endpoint-probe"],
  PersistentVolumeClaim: ["long-pending"],
  Node: ["not-ready"],
};

export const REMEDIATIONS = ["None", "DeletePod", "RestartPod"] as const;
export type Remediation = (typeof REMEDIATIONS)[number];

/** Limits named in the schema and in its errors. */
export const MONITOR_LIMITS = {
  /** 3 seconds: short enough for tests, long enough not to flap on a watch's delay. */
  minCutOffMinutes: 0.05,
  /** One year. */
  maxCutOffMinutes: 525_600,
  maxTimeoutSeconds: 60,
  maxRetries: 10,
  minPeriodSeconds: 1,
  maxPeriodSeconds: 3600,
  maxAlertsInStatus: 100,
} as const;

const pairs = Object.entries(CONDITIONS_OF)
  .map(
    ([kind, conditions]) =>
      `(self.object == '${kind}' && self.condition in [${conditions.map((c) => `'${c}'`).join(", ")}])`,
  )
  .join(" || ");

export const ProbeSchema = Type.Object(
  {
    endpointUrl: Type.String({
      description:
        "The URL to GET, a template over the pod's fields: `{{status.podIP}}`, `{{metadata.name}}`, `{{metadata.labels.app}}`, e.g. `http://{{status.podIP}}:8888/api`.",
      minLength: 1,
      maxLength: 2048,
      pattern: "^https?://",
    }),
    timeoutSeconds: Type.Number({
      description: "How long one GET may take.",
      minimum: 0.1,
      maximum: MONITOR_LIMITS.maxTimeoutSeconds,
      default: 5,
    }),
    retries: Type.Integer({
      description: "GETs tried again after a failure before the probe counts as failed.",
      minimum: 0,
      maximum: MONITOR_LIMITS.maxRetries,
      default: 2,
    }),
    statusCode: Type.Integer({
      description: "The status the endpoint must answer with.",
      minimum: 100,
      maximum: 599,
      default: 200,
    }),
    initialDelaySeconds: Type.Number({
      description:
        "How long after its containers last started a pod is first probed (a server still starting is not an alert).",
      minimum: 0,
      maximum: MONITOR_LIMITS.maxPeriodSeconds,
      default: 10,
    }),
    periodSeconds: Type.Number({
      description: "How often each pod is probed.",
      minimum: MONITOR_LIMITS.minPeriodSeconds,
      maximum: MONITOR_LIMITS.maxPeriodSeconds,
      default: 30,
    }),
  },
  { description: "The endpoint-probe condition: an HTTP GET against each selected running pod." },
);
export type Probe = Static<typeof ProbeSchema>;

export const MonitorRuleSpecSchema = Type.Object(
  {
    object: StringEnum(MONITORED_KINDS, { description: "The kind of object watched." }),
    condition: StringEnum(MONITOR_CONDITIONS, {
      description:
        "What fires an alert (Table 4): Pod long-running, long-pending, long-terminating, last-restart, endpoint-probe; PersistentVolumeClaim long-pending; Node not-ready.",
    }),
    cutOffMinutes: Type.Optional(
      Type.Number({
        description:
          "How long the condition must last (last-restart: how recent the restart) before the alert fires; fractions allowed.",
        minimum: MONITOR_LIMITS.minCutOffMinutes,
        maximum: MONITOR_LIMITS.maxCutOffMinutes,
      }),
    ),
    probe: Type.Optional(ProbeSchema),
    tenant: Type.Optional(
      DnsLabel({
        description:
          "Only the namespaces of this tenant; absent: every namespace. Nodes belong to no tenant.",
      }),
    ),
    selector: Type.Optional(LabelSelector("Only objects with these labels; absent: every object.")),
    webhook: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            description: "Where firing and resolved alerts are POSTed as JSON.",
            minLength: 1,
            maxLength: 2048,
            pattern: "^https?://",
          }),
          secretRef: Type.Optional(
            Type.Object(
              {
                namespace: DnsLabel({ description: "The Secret's namespace." }),
                name: DnsSubdomain({ description: "The Secret's name." }),
                key: Type.String({
                  description: "The key holding the signing secret.",
                  minLength: 1,
                  maxLength: 253,
                  default: "hmac-secret",
                }),
              },
              {
                description:
                  "The Secret whose key signs each body: header `X-Tenantry-Signature-256: sha256=<HMAC-SHA256 hex>`.",
              },
            ),
          ),
        },
        { description: "A webhook notified of every alert, retried with backoff." },
      ),
    ),
    remediation: Type.Optional(
      Type.Object(
        {
          action: StringEnum(REMEDIATIONS, {
            description:
              "None; DeletePod (long-terminating): delete the pod with no grace period; RestartPod (endpoint-probe, long-running): delete a controller-owned pod so that its owner (e.g. a runtime's Deployment) makes a new one. Always recorded as an Event.",
            default: "None",
          }),
          removeFinalizers: Type.Boolean({
            description:
              "DeletePod also clears the pod's finalizers (what holds it when no one removes them).",
            default: false,
          }),
        },
        { description: "What the monitor does when the alert fires; off by default." },
      ),
    ),
  },
  {
    description: "One condition to watch, on which objects, and what to do when it holds.",
    "x-kubernetes-validations": [
      { rule: pairs, message: "condition is not one of object's conditions", fieldPath: ".condition" },
      {
        rule: "self.condition == 'endpoint-probe' ? has(self.probe) : has(self.cutOffMinutes)",
        message: "endpoint-probe needs probe; every other condition needs cutOffMinutes",
        reason: "FieldValueRequired",
      },
      {
        rule: "self.condition != 'endpoint-probe' || !has(self.cutOffMinutes)",
        message: "endpoint-probe takes probe, not cutOffMinutes",
        fieldPath: ".cutOffMinutes",
        reason: "FieldValueForbidden",
      },
      {
        rule: "self.condition == 'endpoint-probe' || !has(self.probe)",
        message: "probe is for the endpoint-probe condition only",
        fieldPath: ".probe",
        reason: "FieldValueForbidden",
      },
      {
        rule: "self.object != 'Node' || !has(self.tenant)",
        message: "nodes belong to no tenant",
        fieldPath: ".tenant",
        reason: "FieldValueForbidden",
      },
      {
        rule: "!has(self.remediation) || self.remediation.action != 'DeletePod' || self.condition == 'long-terminating'",
        message: "DeletePod remediates long-terminating only",
        fieldPath: ".remediation.action",
      },
      {
        rule: "!has(self.remediation) || self.remediation.action != 'RestartPod' || self.condition in ['endpoint-probe', 'long-running']",
        message: "RestartPod remediates endpoint-probe and long-running only",
        fieldPath: ".remediation.action",
      },
    ],
  },
);
export type MonitorRuleSpec = Static<typeof MonitorRuleSpecSchema>;

export const AlertSchema = Type.Object(
  {
    kind: StringEnum(MONITORED_KINDS, { description: "The object's kind." }),
    namespace: Type.Optional(Type.String({ description: "Its namespace.", maxLength: 63 })),
    name: Type.String({ description: "Its name.", maxLength: 253 }),
    tenant: Type.Optional(Type.String({ description: "Its tenant.", maxLength: 63 })),
    since: Type.String({ description: "When the condition began.", format: "date-time" }),
    firedAt: Type.String({ description: "When the alert fired.", format: "date-time" }),
    message: Type.String({ description: "What holds, for people.", maxLength: 1024 }),
  },
  { description: "One firing alert." },
);
export type Alert = Static<typeof AlertSchema>;

export const MonitorRuleStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    firing: Type.Optional(Type.Integer({ description: "How many alerts fire now.", minimum: 0 })),
    alerts: Type.Optional(
      AtomicList(AlertSchema, {
        description: `The firing alerts, oldest first (at most ${MONITOR_LIMITS.maxAlertsInStatus}).`,
        maxItems: MONITOR_LIMITS.maxAlertsInStatus,
      }),
    ),
    conditions: Type.Optional(ConditionList("`Ready`: the monitor evaluates the rule.")),
  },
  { description: "What fires now." },
);
export type MonitorRuleStatus = Static<typeof MonitorRuleStatusSchema>;

export const MonitorRuleSchema = ResourceSchema({
  description: "A monitor rule: one condition of pods, claims or nodes that raises alerts.",
  spec: MonitorRuleSpecSchema,
  status: MonitorRuleStatusSchema,
});
export type MonitorRule = Static<typeof MonitorRuleSchema>;
