/**
 * `tenantry monitor create|list|get|delete|alerts`: the MonitorRules of a cluster and the alerts
 * firing now, read from the rules' status (where the leading tenantry's monitor keeps them).
 */
import type { Command } from "commander";
import { UserError } from "../common/index.js";
import {
  MONITOR_CONDITIONS,
  MONITOR_RULE_CRD,
  MONITORED_KINDS,
  type MonitorRule,
  REMEDIATIONS,
} from "../monitor/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import { parseSelector } from "./cloud.js";
import {
  createObject,
  EXIT,
  listObjects,
  type ObjectKind,
  objectGroup,
  registerObjectCommands,
} from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

/** What a rule watches, in one line: `Pod long-pending > 5 min`, `Pod endpoint-probe GET …`. */
export function describeRule(rule: MonitorRule): string {
  const { spec } = rule;
  const what =
    spec.condition === "endpoint-probe" && spec.probe
      ? `GET ${spec.probe.endpointUrl} → ${spec.probe.statusCode} every ${spec.probe.periodSeconds}s`
      : `${spec.condition === "last-restart" ? "within" : ">"} ${spec.cutOffMinutes} min`;
  return `${spec.object} ${spec.condition} ${what}`;
}

const rules: ObjectKind<MonitorRule> = {
  crd: MONITOR_RULE_CRD,
  noun: "monitor rule",
  columns: [
    ["NAME", (r) => r.metadata!.name!],
    ["WATCHES", describeRule],
    ["TENANT", (r) => r.spec.tenant ?? "*"],
    ["REMEDIATION", (r) => r.spec.remediation?.action ?? "None"],
    ["WEBHOOK", (r) => r.spec.webhook?.url ?? ""],
    ["FIRING", (r) => String(r.status?.firing ?? 0)],
  ],
  describe: (r) =>
    [
      `Name:        ${r.metadata!.name}`,
      `Watches:     ${describeRule(r)}`,
      `Tenant:      ${r.spec.tenant ?? "(every namespace)"}`,
      ...(r.spec.selector ? [`Selector:    ${JSON.stringify(r.spec.selector)}`] : []),
      `Remediation: ${r.spec.remediation?.action ?? "None"}`,
      ...(r.spec.webhook ? [`Webhook:     ${r.spec.webhook.url}`] : []),
      `Firing:      ${r.status?.firing ?? 0}`,
      ...(r.status?.alerts ?? []).map(
        (a) => `  ${a.kind}/${a.namespace ? `${a.namespace}/` : ""}${a.name} since ${a.since}: ${a.message}`,
      ),
    ].join("\n"),
  flags: {
    "spec.object": "--object",
    "spec.condition": "--condition",
    "spec.cutOffMinutes": "--cut-off",
    "spec.probe.endpointUrl": "--probe-url",
    "spec.probe.statusCode": "--probe-status",
    "spec.probe.periodSeconds": "--probe-period",
    "spec.probe.timeoutSeconds": "--probe-timeout",
    "spec.probe.retries": "--probe-retries",
    "spec.probe.initialDelaySeconds": "--probe-initial-delay",
    "spec.tenant": "--tenant",
    "spec.selector": "--selector",
    "spec.webhook.url": "--webhook",
    "spec.webhook.secretRef": "--webhook-secret",
    "spec.remediation.action": "--remediation",
  },
};

/** A number flag; the schema says which values are allowed. */
function number(text: string, flag: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value))
    throw new UserError(`${flag} must be a number, got "${text}"`);
  return value;
}

/** `namespace/name[:key]`: the Secret signing the webhook's bodies. */
function secretRef(text: string) {
  const match = /^([^/:]+)\/([^/:]+)(?::(.+))?$/.exec(text);
  if (!match) throw new UserError(`--webhook-secret "${text}" must be namespace/name[:key]`);
  return { namespace: match[1]!, name: match[2]!, key: match[3] ?? "hmac-secret" };
}

/** The rule a `monitor create` describes. */
function ruleOf(name: string, opts: Record<string, string | boolean | undefined>): MonitorRule {
  const text = (key: string) => opts[key] as string | undefined;
  if (opts.webhookSecret && !opts.webhook) throw new UserError("--webhook-secret needs --webhook");
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "MonitorRule",
    metadata: { name },
    spec: {
      object: text("object") as MonitorRule["spec"]["object"],
      condition: text("condition") as MonitorRule["spec"]["condition"],
      ...(opts.cutOff !== undefined ? { cutOffMinutes: number(text("cutOff")!, "--cut-off") } : {}),
      ...(opts.probeUrl
        ? {
            probe: {
              endpointUrl: text("probeUrl")!,
              statusCode: number(text("probeStatus")!, "--probe-status"),
              periodSeconds: number(text("probePeriod")!, "--probe-period"),
              timeoutSeconds: number(text("probeTimeout")!, "--probe-timeout"),
              retries: number(text("probeRetries")!, "--probe-retries"),
              initialDelaySeconds: number(text("probeInitialDelay")!, "--probe-initial-delay"),
            },
          }
        : {}),
      ...(opts.tenant ? { tenant: text("tenant") } : {}),
      ...(opts.selector ? { selector: parseSelector(text("selector")!) } : {}),
      ...(opts.webhook
        ? {
            webhook: {
              url: text("webhook")!,
              ...(opts.webhookSecret ? { secretRef: secretRef(text("webhookSecret")!) } : {}),
            },
          }
        : {}),
      ...(opts.remediation
        ? {
            remediation: {
              action: text("remediation") as NonNullable<MonitorRule["spec"]["remediation"]>["action"],
              removeFinalizers: opts.removeFinalizers === true,
            },
          }
        : {}),
    },
  };
}

export function registerMonitorCommands(program: Command): void {
  const monitor = objectGroup(program, "monitor", rules, "monitor rules and the alerts firing now");

  monitor
    .command("create")
    .description("watch a condition of pods, claims or nodes and alert (and remediate) when it holds")
    .argument("<name>", "rule name")
    .requiredOption("--object <kind>", MONITORED_KINDS.join(", "))
    .requiredOption("--condition <condition>", MONITOR_CONDITIONS.join(", "))
    .option(
      "--cut-off <minutes>",
      "how long the condition must hold (last-restart: how recent), fractions allowed",
    )
    .option("--probe-url <template>", "endpoint-probe: the URL to GET, e.g. http://{{status.podIP}}:8888/api")
    .option("--probe-status <code>", "endpoint-probe: the status it must answer", "200")
    .option("--probe-period <seconds>", "endpoint-probe: how often", "30")
    .option("--probe-timeout <seconds>", "endpoint-probe: how long one GET may take", "5")
    .option("--probe-retries <n>", "endpoint-probe: GETs tried again before it counts as failed", "2")
    .option(
      "--probe-initial-delay <seconds>",
      "endpoint-probe: how long after a start it is first probed",
      "10",
    )
    .option("--tenant <tenant>", "only this tenant's namespaces")
    .option("--selector <selector>", "only objects with these labels: k=v,k in (a,b),!k")
    .option("--webhook <url>", "POST each firing and resolved alert there")
    .option("--webhook-secret <namespace/name[:key]>", "the Secret whose key signs the webhook's bodies")
    .option("--remediation <action>", REMEDIATIONS.join(", "))
    .option("--remove-finalizers", "DeletePod also clears the pod's finalizers")
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      await createObject(command, rules, ruleOf(name, opts), opts);
    });

  registerObjectCommands(monitor, rules);
  // `monitor rules` is what this group's list was first called.
  monitor.commands.find((c) => c.name() === "list")?.alias("rules");

  monitor
    .command("alerts")
    .description("list the alerts firing now, oldest first")
    .option("--rule <name>", "only this rule's alerts")
    .option("--tenant <name>", "only this tenant's alerts")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { output: OutputFormat; rule?: string; tenant?: string }, command: Command) => {
      const found = await listObjects(command, rules);
      if (opts.rule && !found.some((r) => r.metadata?.name === opts.rule)) {
        throw new UserError(`monitor rule "${opts.rule}" not found`, EXIT.notFound);
      }
      const alerts = found
        .filter((r) => !opts.rule || r.metadata?.name === opts.rule)
        .flatMap((r) =>
          (r.status?.alerts ?? []).map((a) => ({
            rule: r.metadata!.name!,
            condition: r.spec.condition,
            ...a,
          })),
        )
        .filter((a) => !opts.tenant || a.tenant === opts.tenant)
        .sort((a, b) => a.firedAt.localeCompare(b.firedAt));
      printResult(alerts, opts.output, () =>
        alerts.length === 0
          ? "no alerts firing"
          : columns([
              ["RULE", "CONDITION", "OBJECT", "TENANT", "SINCE", "MESSAGE"],
              ...alerts.map((a) => [
                a.rule,
                a.condition,
                `${a.kind}/${a.namespace ? `${a.namespace}/` : ""}${a.name}`,
                a.tenant ?? "",
                a.since,
                a.message,
              ]),
            ]).join("\n"),
      );
    });
}
